/**
 * The `Cache-Status` response field (RFC 9211): how this cache handled the request.
 */

export type Forward = 'bypass' | 'method' | 'uri-miss' | 'vary-miss' | 'miss' | 'request' | 'stale';

/** One member of Cache-Status, this cache's. */
export interface CacheStatus {
  hit?: boolean;
  fwd?: Forward | undefined;
  fwdStatus?: number;
  /** Remaining freshness in seconds; negative when served stale (2.5). */
  ttl?: number;
  /** The answer is in the store as its head goes out; never said of a body still streaming. */
  stored?: boolean;
  /** An sf-token saying why, as `no-store` or `stale-while-revalidate`. */
  detail?: string;
}

/** The cache's identifier in Cache-Status (RFC 9211 section 2). */
export const CACHE_NAME = 'Portico';

/**
 * `Portico; fwd=uri-miss; fwd-status=200; stored`, parameters in the RFC's order. Appended to
 * one string (no array and join per answer: every hit formats one).
 */
export function formatCacheStatus(status: CacheStatus): string {
  let text = CACHE_NAME;
  if (status.hit === true) text += '; hit';
  if (status.fwd !== undefined) text += `; fwd=${status.fwd}`;
  if (status.fwdStatus !== undefined) text += `; fwd-status=${status.fwdStatus}`;
  if (status.ttl !== undefined) text += `; ttl=${Math.trunc(status.ttl)}`;
  if (status.stored === true) text += '; stored';
  if (status.detail !== undefined) text += `; detail=${status.detail}`;
  return text;
}

/** RFC 9211 section 2: caches nearer the client append their member after the inner ones'. */
export function appendCacheStatus(headers: Record<string, string | string[]>, status: CacheStatus): void {
  const existing = headers['cache-status'];
  const inner = Array.isArray(existing) ? existing.join(', ') : existing;
  const ours = formatCacheStatus(status);
  headers['cache-status'] = inner === undefined || inner === '' ? ours : `${inner}, ${ours}`;
}
