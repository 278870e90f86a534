/**
 * The PostgreSQL connection of the resource service (porsager/postgres), and what counts as
 * the database being unavailable.
 *
 * While the database is down a request must fail fast (503) and recover without a restart when
 * it is back, so the pool connects with a short timeout and retries a lost connection after a
 * short, bounded delay rather than porsager's default, which grows to 20 s per attempt.
 */
import postgres from 'postgres';
import type { Sql, TransactionSql } from 'postgres';

export interface DatabaseOptions {
  url: string;
  /** Pool size; 1 for the embedded PGlite, which has a single backend. */
  max?: number;
  /** Server-side cap per statement: a runaway query is cancelled, not left holding a connection. */
  statementTimeoutMs?: number;
}

/**
 * How long opening a connection may take before the request waiting for it gets a 503. Below
 * the 3 s a caller is promised an answer in while the database is down: a request that arrives
 * while PostgreSQL restarts waits for its connection attempt, and at 3 s such answers took
 * 3.1–3.3 s on a loaded machine (test/resource-service/database-outage.test.ts); at 2 s the
 * slowest took 2.2–2.5 s with three of those tests running at once.
 */
export const CONNECT_TIMEOUT_SECONDS = 2;
/** Longest pause before a closed connection is opened again, seconds. */
const MAX_RECONNECT_DELAY_SECONDS = 0.25;

/** The connection is gone, and porsager has already closed its side. */
const LOST_CONNECTION = new Set(['CONNECTION_CLOSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);

const UNAVAILABLE = new Set([
  ...LOST_CONNECTION,
  // porsager's own: ended or destroyed pool, no connection within connect_timeout.
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // SQLSTATE: admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections.
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * True when `error` says the database cannot be reached or is shutting down or starting: the
 * request did not fail on its own merits, and the same request may succeed shortly.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const code = codeOf(error);
  // SQLSTATE class 08: connection exception.
  return code !== undefined && (UNAVAILABLE.has(code) || /^08[0-9A-Z]{3}$/.test(code));
}

type Work<T> = (tx: TransactionSql) => T | Promise<T>;

/**
 * `sql.begin` without porsager 3.4.9's crash on a lost connection: its begin() answers the
 * failed query with a ROLLBACK written to the connection it has just closed, and that write
 * throws from a setImmediate, which ends the process (porsager/postgres#1208, #1133). The
 * server rolls back a transaction whose connection is gone, so there is nothing to undo: the
 * transaction fails at once and porsager's scope is left unsettled, so that it writes nothing.
 */
function beginSurvivingLostConnections(begin: Sql['begin']): Sql['begin'] {
  const guarded = <T>(...args: [Work<T>] | [string, Work<T>]) => {
    const [mode, work] = args.length === 1 ? ['', args[0]] : args;
    let abandon: (error: unknown) => void = () => {};
    const abandoned = new Promise<never>((_, reject) => (abandon = reject));
    const transaction = begin(mode, async (tx) => {
      try {
        const result = work(tx);
        return await (Array.isArray(result) ? Promise.all(result) : result);
      } catch (error) {
        if (!LOST_CONNECTION.has(codeOf(error) ?? '')) throw error;
        abandon(error);
        return new Promise<never>(() => {});
      }
    });
    return Promise.race([transaction, abandoned]);
  };
  return guarded as Sql['begin'];
}

/**
 * libpq's spelling of a Unix socket, `?host=/directory` (the embedded database's URL uses it),
 * as porsager's `path`: porsager reads no socket from a URL, and would send `host` to the
 * server as a setting instead.
 */
export function unixSocketOf(url: string): { url: string; path?: string } {
  if (!/[?&]host=%2F|[?&]host=\//i.test(url)) return { url };
  const parsed = new URL(url);
  const dir = parsed.searchParams.get('host') ?? '';
  parsed.searchParams.delete('host');
  return { url: parsed.toString(), path: `${dir}/.s.PGSQL.${parsed.port || '5432'}` };
}

export function connectDatabase(options: DatabaseOptions): Sql {
  const target = unixSocketOf(options.url);
  const sql = postgres(target.url, {
    ...(target.path === undefined ? {} : { path: target.path }),
    max: options.max ?? 10,
    idle_timeout: 30,
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    // Jittered, so that a pool does not reconnect in lockstep when the database comes back.
    backoff: (attempt) =>
      Math.min(0.05 * 2 ** attempt, MAX_RECONNECT_DELAY_SECONDS) * (0.5 + Math.random() / 2),
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
  // Every transaction of the service (routes, idempotency) goes through this one method.
  return Object.assign(sql, { begin: beginSurvivingLostConnections(sql.begin.bind(sql)) });
}
