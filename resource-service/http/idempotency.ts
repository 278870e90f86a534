/**
 * The HTTP side of Idempotency-Key (IETF httpapi draft): reading the header, fingerprinting
 * the request it protects, and sending the first answer or its replay. The records themselves
 * live in data/idempotency.ts.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpProblem } from '../../shared/errors.ts';
import type { IdempotentResult } from '../data/idempotency.ts';
import { NO_STORE, sendJson } from './respond.ts';

/** Printable ASCII, as a bare token or an RFC 8941 sf-string. */
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

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

/** Sends the first answer, or its replay marked as one. Writes are never stored by caches. */
export function sendIdempotentResult(res: ServerResponse, { response, replayed }: IdempotentResult): void {
  sendJson(res, {
    status: response.status,
    body: response.body,
    headers: replayed ? { ...response.headers, 'Idempotent-Replayed': 'true' } : response.headers,
    cache: NO_STORE,
  });
}
