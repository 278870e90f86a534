/**
 * A client's conditional GET/HEAD answered from a stored response (RFC 9111 section 4.3.2,
 * RFC 9110 section 13.1): If-None-Match by weak comparison, else If-Modified-Since against
 * Last-Modified, or Date, of the stored response, or the time it was received (4.3.2).
 *
 * A Date after the client's If-Modified-Since is a full answer, never a 304: with no
 * Last-Modified, the Date is the only evidence of when the representation last changed, and a
 * 304 would tell a client holding an older copy that it is current (the caching test suite's
 * conditional-lm-fresh-no-lm asks for that 304; docs/caching.md says why not).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { firstValue, joinField } from '../rules/directives.ts';
import { parseHttpDate } from '../../foundation/http-date.ts';

/** The stored response fields a conditional request is compared with. */
export interface Validators {
  etag?: string | string[] | undefined;
  'last-modified'?: string | string[] | undefined;
  date?: string | string[] | undefined;
}

/**
 * True when the client's copy is current: answer 304 instead of the stored body. `receivedAt`
 * (ms since the epoch) stands for a missing Date.
 */
export function notModified(request: IncomingHttpHeaders, stored: Validators, receivedAt?: number): boolean {
  const ifNoneMatch = joinField(request['if-none-match']);
  if (ifNoneMatch !== undefined) {
    // 13.1.2: `*` matches any current representation; otherwise weak comparison.
    if (ifNoneMatch.trim() === '*') return true;
    const etag = firstValue(stored.etag);
    if (etag === undefined) return false;
    const opaque = weak(etag);
    return entityTags(ifNoneMatch).some((tag) => weak(tag) === opaque);
  }
  // 13.1.3: If-Modified-Since is ignored when If-None-Match is present (handled above).
  const since = parseHttpDate(request['if-modified-since']);
  if (since === undefined) return false;
  const modified = parseHttpDate(stored['last-modified']) ?? parseHttpDate(stored.date) ?? receivedAt;
  return modified !== undefined && modified <= since;
}

function entityTags(list: string): string[] {
  return [...list.matchAll(/(?:W\/)?"[^"]*"/g)].map((m) => m[0]);
}

function weak(tag: string): string {
  return tag.trim().replace(/^W\//, '');
}
