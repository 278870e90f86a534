/**
 * The PostgreSQL connection of the resource service (porsager/postgres).
 */
import postgres from 'postgres';
import type { Sql } from 'postgres';

export interface DatabaseOptions {
  url: string;
  /** Pool size; 1 for the embedded PGlite, which has a single backend. */
  max?: number;
  /** Server-side cap per statement: a runaway query is cancelled, not left holding a connection. */
  statementTimeoutMs?: number;
}

export function connectDatabase(options: DatabaseOptions): Sql {
  return postgres(options.url, {
    max: options.max ?? 10,
    idle_timeout: 30,
    connect_timeout: 10,
    onnotice: () => {},
    connection: {
      application_name: 'portico-resource-service',
      statement_timeout: options.statementTimeoutMs ?? 5000,
      // A transaction left open by a bug must not hold locks forever.
      idle_in_transaction_session_timeout: 30_000,
    },
    types: {
      // bigint amounts stay below 2^53 by CHECK constraints, so numbers are exact.
      bigint: {
        to: 20,
        from: [20],
        serialize: (value: number) => String(value),
        parse: (value: string) => Number(value),
      },
    },
  });
}
