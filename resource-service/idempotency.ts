/**
 * Idempotency-Key (IETF httpapi draft) for POST /v1/orders and POST /v1/payments.
 *
 * The record is written in the same transaction as the order or payment it protects, so a
 * retry can never create a second one, even after a crash between write and answer. A
 * transaction-scoped advisory lock on (customer, key) tells a retry whose twin is still running
 * (409) from one whose twin has finished (its stored answer is replayed).
 *
 * Only successes are stored: a refused request changes nothing, so running it again is safe,
 * and a client may fix the problem and retry with the same key.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Sql, TransactionSql } from 'postgres';
import { HttpProblem } from '../shared/errors.ts';
import { NO_STORE, sendJson } from './http/respond.ts';

export const IDEMPOTENCY_TTL_HOURS = 24;
/** Printable ASCII, as a bare token or an RFC 8941 sf-string. */
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** The Idempotency-Key of a request, or undefined when none was sent. */
export function idempotencyKeyOf(req: IncomingMessage): string | undefined {
  const given = req.headers['idempotency-key'];
  if (given === undefined) return undefined;
  // Node keeps unknown repeated headers as a list: two keys on one request is an error.
  const raw = Array.isArray(given) ? '' : given;
  const key = raw.length >= 2 && raw.startsWith('"') && raw.endsWith('"') ? raw.slice(1, -1) : raw;
  if (!KEY_PATTERN.test(key) || key.includes('"') || key.includes('\\')) {
    throw new HttpProblem(
      'ERR_INVALID_HEADER',
      'Idempotency-Key must be 1 to 255 printable ASCII characters',
      {
        extensions: { errors: [{ header: 'Idempotency-Key', detail: 'malformed' }] },
      },
    );
  }
  return key;
}

/** JSON with object keys sorted, so that key order does not make two bodies differ. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function requestFingerprint(method: string, path: string, body: unknown): Buffer {
  return createHash('sha256')
    .update(`${method} ${path}\n${canonicalJson(body)}`)
    .digest();
}

export interface IdempotentResult {
  response: StoredResponse;
  replayed: boolean;
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
      throw new HttpProblem(
        'ERR_IDEMPOTENCY_IN_FLIGHT',
        'The first request with this Idempotency-Key is still running',
        {
          headers: { 'Retry-After': '1' },
        },
      );
    }
    const [existing] = await tx<
      {
        fingerprint: Buffer;
        response_status: number;
        response_headers: Record<string, string>;
        response_body: unknown;
      }[]
    >`
      select fingerprint, response_status, response_headers, response_body
      from idempotency_records
      where customer_id = ${customerId} and idempotency_key = ${key} and expires_at > now()`;
    if (existing !== undefined) {
      if (!existing.fingerprint.equals(fingerprint)) {
        throw new HttpProblem(
          'ERR_IDEMPOTENCY_KEY_REUSED',
          'This Idempotency-Key was used for a different request',
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

/** Sends the first answer, or its replay marked as one. Writes are never stored by caches. */
export function sendIdempotentResult(res: ServerResponse, { response, replayed }: IdempotentResult): void {
  sendJson(res, {
    status: response.status,
    body: response.body,
    headers: replayed ? { ...response.headers, 'Idempotent-Replayed': 'true' } : response.headers,
    cache: NO_STORE,
  });
}

/** Removes expired records; run periodically, cheap thanks to the expiry index. */
export async function purgeExpiredIdempotencyRecords(sql: Sql): Promise<number> {
  const result = await sql`
    delete from idempotency_records
    where ctid in (select ctid from idempotency_records where expires_at <= now() limit 10000)`;
  return result.count;
}
