/**
 * Partial responses (206) kept until they add up to the whole representation (RFC 9111
 * section 3.4): pieces of one stored-response key are combined only while they share one
 * strong validator and one total length; a piece with another validator starts over. Once the
 * pieces cover every byte, the complete body comes back and the pieces are dropped; the caller
 * stores it as a 200 like any other response. Pieces that cover the start of a representation
 * can be found by URI (`prefix`), for a request of the whole to fetch only the rest (3.3).
 *
 * Bounded by bytes (least recently added first) and dropped by path like stored responses, so
 * an invalidation between two pieces leaves nothing stale to combine.
 */
import { LRUCache } from 'lru-cache';

/** One received range of a representation. */
export interface Piece {
  /**
   * The strong validator every piece of the representation carries (3.4): its ETag, or its
   * Last-Modified date when it has no ETag; as sent, fit for If-Range (RFC 9110 13.1.5).
   */
  validator: string;
  /** The representation's length, from `Content-Range: bytes first-last/total`. */
  total: number;
  first: number;
  bytes: Buffer;
}

/** Where a key's pieces belong: the path invalidations name, the URI and variant lookups name. */
export interface PieceOwner {
  path: string;
  /** The partition, authority and target (entry-store.ts `primaryKey`). */
  primary: string;
  /** The request values of the Vary fields the pieces were selected by. */
  varyValues: ReadonlyMap<string, string | undefined>;
}

/** The first bytes of a representation, held as pieces: what a request of the rest needs. */
export interface Prefix {
  validator: string;
  total: number;
  /** Bytes 0..length-1 of the representation. */
  bytes: Buffer;
}

/** The pieces of one key so far. */
interface Pieces extends PieceOwner {
  validator: string;
  total: number;
  ranges: { first: number; bytes: Buffer }[];
  size: number;
}

/** The partial responses of one cache instance. */
export interface PartialStore {
  /** Adds a piece for `key`; the whole body once the pieces cover it. */
  add(key: string, owner: PieceOwner, piece: Piece): Buffer | undefined;
  /**
   * The first bytes held for a URI (`primary`), of pieces whose variant `matches` the
   * request; undefined when no piece starts at byte 0.
   */
  prefix(primary: string, matches: (varyValues: PieceOwner['varyValues']) => boolean): Prefix | undefined;
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
  /** Keys by URI, for `prefix`: a few variants each, never a scan of every piece. */
  const byPrimary = new Map<string, Set<string>>();
  const pieces = new LRUCache<string, Pieces>({
    maxSize: Math.max(1, maxBytes),
    sizeCalculation: (entry) => entry.size + OVERHEAD,
    dispose: (entry, key, reason) => {
      if (reason === 'set') return;
      const keys = byPrimary.get(entry.primary);
      keys?.delete(key);
      if (keys?.size === 0) byPrimary.delete(entry.primary);
    },
  });
  const deleteWhere = (match: (path: string) => boolean) => {
    for (const [key, entry] of [...pieces.entries()]) if (match(entry.path)) pieces.delete(key);
  };
  return {
    add(key, owner, piece) {
      let entry = pieces.get(key);
      if (
        entry === undefined ||
        entry.validator !== piece.validator ||
        entry.total !== piece.total ||
        entry.ranges.length >= MAX_PIECES
      )
        entry = { ...owner, validator: piece.validator, total: piece.total, ranges: [], size: 0 };
      entry.ranges.push({ first: piece.first, bytes: piece.bytes });
      entry.size += piece.bytes.length + RANGE_OVERHEAD;
      const whole = assemble(entry);
      if (whole !== undefined) {
        pieces.delete(key);
        return whole;
      }
      // Set again: the size changed, and a new entry may replace one with another validator.
      pieces.set(key, entry);
      let keys = byPrimary.get(entry.primary);
      if (keys === undefined) byPrimary.set(entry.primary, (keys = new Set()));
      keys.add(key);
      return undefined;
    },
    prefix(primary, matches) {
      for (const key of byPrimary.get(primary) ?? []) {
        const entry = pieces.peek(key);
        if (entry === undefined || !matches(entry.varyValues)) continue;
        const bytes = leadingBytes(entry);
        if (bytes !== undefined) return { validator: entry.validator, total: entry.total, bytes };
      }
      return undefined;
    },
    deletePath: (path) => deleteWhere((p) => p === path),
    deletePathPrefix: (prefix) => deleteWhere((p) => p.startsWith(prefix)),
    clear: () => {
      pieces.clear();
      byPrimary.clear();
    },
  };
}

/** The bytes the ranges cover from 0 without a gap, or undefined when none starts at 0. */
function leadingBytes(entry: Pieces): Buffer | undefined {
  const sorted = [...entry.ranges].sort((a, b) => a.first - b.first);
  let covered = 0;
  for (const range of sorted) {
    if (range.first > covered) break;
    covered = Math.max(covered, range.first + range.bytes.length);
  }
  if (covered === 0) return undefined;
  const out = Buffer.alloc(covered);
  for (const range of sorted) if (range.first < covered) range.bytes.copy(out, range.first);
  return out;
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
