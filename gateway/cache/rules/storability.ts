/**
 * Whether a response may be stored (RFC 9111 section 3), with the reason when not, for
 * Cache-Status. Authorization (3.5) is decided by the partition; see partition.ts.
 */
import { LIBRARY_STATUSES, type Policy } from './policy.ts';
import type { Headers, ResponseSemantics } from './response-semantics.ts';

/** RFC 9110 section 15.1, without 206: partial content is not stored here. */
const HEURISTICALLY_CACHEABLE = new Set([200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]);

/** Stored, or the reason (an sf-token for Cache-Status detail). */
export type Verdict = { ok: true } | { ok: false; reason: string };

/** The facts section 3 decides on. */
export interface StorabilityInput {
  method: string;
  status: number;
  headers: Headers;
  semantics: ResponseSemantics;
  requestNoStore: boolean;
  policy: Policy;
}

/** RFC 9111 section 3 for a shared cache, with the library's storable() as the last check. */
export function storability(input: StorabilityInput): Verdict {
  const { status, semantics } = input;
  const has = (name: string) => semantics.directives.has(name);
  const refuse = (reason: string): Verdict => ({ ok: false, reason });
  // A HEAD response has no body to answer a GET with; 4.3.5 freshening is not attempted.
  if (input.method !== 'GET') return refuse('method');
  // Final responses only; 206 (ranges) and 304 are never stored as such.
  if (status < 200 || status > 599 || status === 206 || status === 304) return refuse('status');
  if (input.requestNoStore) return refuse('request-no-store');
  // An event stream is live: a stored copy would replay old events as new ones, and storing it
  // would hold collapsed requests until the stream ends (issue 35).
  if (isEventStream(input.headers['content-type'])) return refuse('event-stream');
  if (has('must-understand')) {
    // 5.2.2.3: stored only when this cache understands the status code; no-store is then ignored.
    if (!LIBRARY_STATUSES.has(status)) return refuse('must-understand');
  } else if (has('no-store')) return refuse('no-store');
  if (semantics.private) return refuse('private');
  // 4.1: a stored Vary: * never matches a later request; storing it would only take room.
  if (semantics.vary.includes('*')) return refuse('vary-star');
  // RFC 9111 allows storing Set-Cookie, but replaying one client's cookie to another is a
  // session leak; like http-cache-semantics we require an explicit public.
  if (input.headers['set-cookie'] !== undefined && !has('public')) return refuse('set-cookie');
  const explicit = hasExplicitFreshness(input.headers, semantics);
  if (!explicit && !has('public') && !HEURISTICALLY_CACHEABLE.has(status)) return refuse('no-freshness');
  if (!input.policy.storable()) return refuse('not-storable');
  return { ok: true };
}

/** 4.2.1: max-age, s-maxage, or Expires (not under a targeted field, RFC 9213 section 2.2). */
export function hasExplicitFreshness(headers: Headers, semantics: ResponseSemantics): boolean {
  const has = (name: string) => semantics.directives.has(name);
  return has('max-age') || has('s-maxage') || (!semantics.targeted && headers['expires'] !== undefined);
}

/** `text/event-stream`, whatever its parameters and case. */
function isEventStream(contentType: string | string[] | undefined): boolean {
  if (typeof contentType !== 'string') return false;
  return /^\s*text\/event-stream\s*(;|$)/i.test(contentType);
}
