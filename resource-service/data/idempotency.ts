/**
 * Idempotency records (IETF httpapi Idempotency-Key draft) for POST /v1/orders and
 * POST /v1/payments.
 *
 * The record is written in the same transaction as the order or payment it protects, so a
 * retry can never create a second one, even after a crash between write and answer. A
 * transaction-scoped advisory lock on (customer, key) tells a retry whose twin is still running
 * from one whose twin has finished (its stored answer is returned instead of running again).
 *
 * Only successes are stored: a refused request changes nothing, so running it again is safe,
 * and a client may fix the problem and retry with the same key.
 */
import type { Sql, TransactionSql } from 'postgres';
import { DomainError } from '../domain/errors.ts';

export const IDEMPOTENCY_TTL_HOURS = 24;

/** The answer a first request got, as stored for its retries. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export interface IdempotentResult {
  response: StoredResponse;
  replayed: boolean;
}

interface IdempotencyRecord {
  fingerprint: Buffer;
  response_status: number;
  response_headers: Record<string, string>;
  response_body: unknown;
}

/**
 * Runs `work` in a transaction, exactly once per (customer, key). Without a key it simply
 * runs `work` in a transaction.
 */
export async function runIdempotent(
  sql: Sql,
  request: { customerId: string; key: string | undefined; fingerprint: Buffer },
  work: (tx: TransactionSql) => Promise<StoredResponse>,
): Promise<IdempotentResult> {
  const { customerId, key, fingerprint } = request;
  if (key === undefined) return { response: await sql.begin(work), replayed: false };

  return sql.begin(async (tx) => {
    // A newline cannot occur in a customer id, so "customer\nkey" names one pair only.
    const [lock] = await tx<{ locked: boolean }[]>`
      select pg_try_advisory_xact_lock(hashtextextended(${`${customerId}\n${key}`}, 7041)) as locked`;
    if (lock?.locked !== true) {
      throw new DomainError(
        'idempotency-in-flight',
        'The first request with this Idempotency-Key is still running',
        {},
      );
    }
    const [existing] = await tx<IdempotencyRecord[]>`
      select fingerprint, response_status, response_headers, response_body
      from idempotency_records
      where customer_id = ${customerId} and idempotency_key = ${key} and expires_at > now()`;
    if (existing !== undefined) {
      if (!existing.fingerprint.equals(fingerprint)) {
        throw new DomainError(
          'idempotency-key-reused',
          'This Idempotency-Key was used for a different request',
          {},
        );
      }
      return {
        replayed: true,
        response: {
          status: existing.response_status,
          headers: existing.response_headers,
          body: existing.response_body,
        },
      };
    }
    // An expired record may still be there; the key is free again.
    await tx`delete from idempotency_records where customer_id = ${customerId} and idempotency_key = ${key}`;
    const response = await work(tx);
    await tx`
      insert into idempotency_records
        (customer_id, idempotency_key, fingerprint, response_status, response_headers, response_body, expires_at)
      values (${customerId}, ${key}, ${fingerprint}, ${response.status}, ${tx.json(response.headers)},
              ${tx.json(response.body as never)}, now() + make_interval(hours => ${IDEMPOTENCY_TTL_HOURS}))`;
    return { response, replayed: false };
  });
}

/** Removes expired records; run periodically, cheap thanks to the expiry index. */
export async function purgeExpiredIdempotencyRecords(sql: Sql): Promise<number> {
  const result = await sql`
    delete from idempotency_records
    where ctid in (select ctid from idempotency_records where expires_at <= now() limit 10000)`;
  return result.count;
}
