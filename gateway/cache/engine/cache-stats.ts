/**
 * What the cache counts: the outcome of each request the stage handled, and the store's size.
 */

/** What the stage did with a request, for statistics. */
export type Outcome = 'hit' | 'miss' | 'stale' | 'revalidated' | 'bypass';

/** Counters since start, and the store's current size. */
export interface CacheStats {
  /** Answered from storage without the origin (stale-while-revalidate included). */
  hits: number;
  /** Forwarded without a usable stored response. */
  misses: number;
  /** Stored response served stale (stale-while-revalidate, stale-if-error). */
  stale: number;
  /** Stored response validated by the origin (304) and served. */
  revalidated: number;
  bypassed: number;
  stored: number;
  invalidated: number;
  bytes: number;
  entries: number;
}
