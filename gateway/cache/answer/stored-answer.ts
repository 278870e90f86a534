/**
 * A client response built from a stored one: the stored fields with the current Age
 * (RFC 9111 section 5.1) and Cache-Status, the body (none for HEAD), a 304 when the client's
 * conditions match (RFC 9111 section 4.3.2), or the ranges a GET asks for (ranges.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { bufferedResponse, type GatewayResponse } from '../../pipeline/context.ts';
import { appendCacheStatus, formatCacheStatus, type CacheStatus } from './cache-status.ts';
import type { ClientFields } from './client-fields.ts';
import { notModified } from './conditional.ts';
import type { StoredResponse } from '../store/entry-store.ts';
import { ifRangeHolds, partialContent, rangeNotSatisfiable, readRange } from './ranges.ts';

/** RFC 9110 section 15.4.5: what a 304 carries, plus the validators that guide caches. */
const NOT_MODIFIED_FIELDS = [
  'cache-control',
  'content-location',
  'date',
  'etag',
  'expires',
  'vary',
  'last-modified',
];

/**
 * The response to send for a request answered from `entry`; `fields` prepares the stored
 * fields of a whole answer once per entry (client-fields.ts).
 */
export function storedAnswer(
  entry: StoredResponse,
  request: { method: string; headers: IncomingHttpHeaders },
  status: CacheStatus,
  fields: ClientFields,
): GatewayResponse {
  // One reading of the clock for both: Age and the remaining freshness agree to the millisecond.
  const current = entry.policy.age();
  const age = Math.max(0, Math.floor(current));
  const withTtl: CacheStatus =
    status.hit === true ? { ...status, ttl: entry.policy.maxAge() - current } : status;
  const success = entry.status >= 200 && entry.status < 300;
  if (success && notModified(request.headers, entry.headers, entry.storedAt)) {
    const headers: Record<string, string | string[]> = {};
    for (const name of NOT_MODIFIED_FIELDS) {
      const value = entry.headers[name];
      if (value !== undefined) headers[name] = value;
    }
    headers['age'] = String(age);
    appendCacheStatus(headers, withTtl);
    return { status: 304, headers, body: null };
  }
  const prepared = fields.of(entry);
  const headers: Record<string, string | string[]> = { ...prepared.fields };
  headers['age'] = String(age);
  if (prepared.contentLength !== undefined) headers['content-length'] = prepared.contentLength;
  appendCacheStatus(headers, withTtl);
  if (request.method === 'GET' && request.headers.range !== undefined && entry.status === 200) {
    const partial = rangeAnswer(entry, request.headers, headers, formatCacheStatus(withTtl));
    if (partial !== undefined) return partial;
  }
  if (request.method === 'HEAD' || entry.body.length === 0)
    return { status: entry.status, headers, body: null };
  // The stored bytes go out with one res.end(): no stream per cache hit.
  return bufferedResponse(entry.status, headers, entry.body);
}

/**
 * RFC 9110 section 14 on a stored 200: the 206 for the ranges asked, a 416 thrown when none
 * can be satisfied, or `undefined` when the Range is to be ignored (If-Range does not hold,
 * the Range is invalid, or several ranges of a content-coded body, whose parts no multipart
 * wrapper could carry under one Content-Encoding).
 */
function rangeAnswer(
  entry: StoredResponse,
  request: IncomingHttpHeaders,
  headers: Record<string, string | string[]>,
  cacheStatus: string,
): GatewayResponse | undefined {
  if (!ifRangeHolds(request, entry.headers)) return undefined;
  const ask = readRange(request.range, entry.body.length);
  if (ask.kind === 'unsatisfiable') throw rangeNotSatisfiable(entry.body.length, cacheStatus);
  if (ask.kind === 'whole' || (ask.ranges.length > 1 && headers['content-encoding'] !== undefined))
    return undefined;
  const partial = partialContent(headers, entry.body, ask.ranges);
  return bufferedResponse(206, partial.headers, partial.body);
}
