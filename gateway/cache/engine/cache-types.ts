/**
 * The shapes the cache engine and its callers exchange: a request as the cache reads it, what
 * it can do for it, a fill on its way upstream, and the insertion of what came back.
 */
import type { StoredResponse } from '../store/entry-store.ts';
import type { Piece } from '../store/partial-store.ts';

export type { CacheRequest } from '../rules/cache-request.ts';
export type { Fill } from '../store/fills.ts';

/** What the cache can do for a request (RFC 9111 section 4). */
export type Selection =
  | { kind: 'uri-miss' | 'vary-miss' }
  | { kind: 'fresh'; entry: StoredResponse }
  | { kind: 'stale-while-revalidate'; entry: StoredResponse }
  /** `stale`: past its freshness; `request`: the request's directives forbid reuse (5.2.1). */
  | { kind: 'revalidate'; entry: StoredResponse; reason: 'stale' | 'request' };

/** A response from upstream, as the storing rules read it. */
export interface ReceivedResponse {
  status: number;
  headers: Record<string, string | string[]>;
}

/**
 * Whether a response will be stored: refused with a reason, or accepted, to be stored once its
 * body is complete (`commit`) or once its pieces cover it (`addPiece`, RFC 9111 section 3.4).
 * Either stores nothing when the fill was invalidated meanwhile, and says whether it stored.
 */
export type Insertion =
  | { store: false; reason: string }
  | {
      store: true;
      partition: string;
      key: string;
      commit(body: Buffer): boolean;
      addPiece(piece: Piece): boolean;
    };
