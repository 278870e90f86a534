/**
 * Partial responses (206) kept until they add up to the whole representation (RFC 9111
 * section 3.4): pieces of one stored-response key are combined only while they share one
 * strong validator and one total length; a piece with another validator starts over. Once the
 * pieces cover every byte, the complete body comes back and the pieces are dropped; the caller
 * stores it as a 200 like any other response.
 *
 * Bounded by bytes (least recently added first) and dropped by path like stored responses, so
 * an invalidation between two pieces leaves nothing stale to combine.
 */
import { LRUCache } from 'lru-cache';

/** One received range of a representation. */
export interface Piece {
  /** The strong ETag both this piece and the others carry (3.4). */
  etag: string;
  /** The representation's length, from `Content-Range: bytes first-last/total`. */
  total: number;
  first: number;
  bytes: Buffer;
}

/** The pieces of one key so far. */
interface Pieces {
  path: string;
  etag: string;
  total: number;
  ranges: { first: number; bytes: Buffer }[];
  size: number;
}

/** The partial responses of one cache instance. */
export interface PartialStore {
  /** Adds a piece for `key`; the whole body once the pieces cover it. */
  add(key: string, path: string, piece: Piece): Buffer | undefined;
  deletePath(path: string): void;
  deletePathPrefix(prefix: string): void;
  clear(): void;
}

const OVERHEAD = 256;
/** What one kept range costs besides its bytes (its Buffer and record), counted against the bound. */
const RANGE_OVERHEAD = 96;
/** Pieces of one representation beyond this start over: many tiny ranges cost memory, not bytes. */
const MAX_PIECES = 64;

/** A store holding at most `maxBytes` of pieces. */
export function createPartialStore(maxBytes: number): PartialStore {
  const pieces = new LRUCache<string, Pieces>({
    maxSize: Math.max(1, maxBytes),
    sizeCalculation: (entry) => entry.size + OVERHEAD,
  });
  const deleteWhere = (match: (path: string) => boolean) => {
    for (const [key, entry] of [...pieces.entries()]) if (match(entry.path)) pieces.delete(key);
  };
  return {
    add(key, path, piece) {
      let entry = pieces.get(key);
      if (
        entry === undefined ||
        entry.etag !== piece.etag ||
        entry.total !== piece.total ||
        entry.ranges.length >= MAX_PIECES
      )
        entry = { path, etag: piece.etag, total: piece.total, ranges: [], size: 0 };
      entry.ranges.push({ first: piece.first, bytes: piece.bytes });
      entry.size += piece.bytes.length + RANGE_OVERHEAD;
      const whole = assemble(entry);
      if (whole !== undefined) {
        pieces.delete(key);
        return whole;
      }
      // Set again: the size changed, and a new entry may replace one with another validator.
      pieces.set(key, entry);
      return undefined;
    },
    deletePath: (path) => deleteWhere((p) => p === path),
    deletePathPrefix: (prefix) => deleteWhere((p) => p.startsWith(prefix)),
    clear: () => pieces.clear(),
  };
}

/** The whole body when the ranges cover 0..total-1 without a gap, else `undefined`. */
function assemble(entry: Pieces): Buffer | undefined {
  const sorted = [...entry.ranges].sort((a, b) => a.first - b.first);
  let covered = 0;
  for (const range of sorted) {
    if (range.first > covered) return undefined;
    covered = Math.max(covered, range.first + range.bytes.length);
  }
  if (covered < entry.total) return undefined;
  const whole = Buffer.allocUnsafeSlow(entry.total);
  for (const range of sorted) range.bytes.copy(whole, range.first);
  return whole;
}
