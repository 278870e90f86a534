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

/** `Portico; fwd=uri-miss; fwd-status=200; stored`, parameters in the RFC's order. */
export function formatCacheStatus(status: CacheStatus): string {
  const parts = [CACHE_NAME];
  if (status.hit === true) parts.push('hit');
  if (status.fwd !== undefined) parts.push(`fwd=${status.fwd}`);
  if (status.fwdStatus !== undefined) parts.push(`fwd-status=${status.fwdStatus}`);
  if (status.ttl !== undefined) parts.push(`ttl=${Math.trunc(status.ttl)}`);
  if (status.stored === true) parts.push('stored');
  if (status.detail !== undefined) parts.push(`detail=${status.detail}`);
  return parts.join('; ');
}

/** RFC 9211 section 2: caches nearer the client append their member after the inner ones'. */
export function appendCacheStatus(headers: Record<string, string | string[]>, status: CacheStatus): void {
  const existing = headers['cache-status'];
  const inner = Array.isArray(existing) ? existing.join(', ') : existing;
  const ours = formatCacheStatus(status);
  headers['cache-status'] = inner === undefined || inner === '' ? ours : `${inner}, ${ours}`;
}
