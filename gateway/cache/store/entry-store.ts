/**
 * Stored responses in an LRU bounded by bytes, with the two indexes the cache needs: by
 * partition and target (the variants of one URI, RFC 9111 section 4.1) and by path (what an
 * invalidation drops: every query string, every partition).
 *
 * Each entry also counts against its owner's budget (a customer, or the shared entries): past
 * it, the owner's own least recently used entries are evicted first. One LRU alone lets any
 * caller evict every other's entries by storing new ones (distinct query strings cost nothing);
 * with the budget, a flood fills only its own owner's share.
 */
import { LRUCache } from 'lru-cache';
import type { Policy } from '../rules/policy.ts';
import type { ResponseSemantics } from '../rules/response-semantics.ts';

/** One stored response with what reusing it needs. */
export interface StoredResponse {
  readonly key: string;
  readonly primary: string;
  readonly path: string;
  /** Whose byte budget the entry counts against (partition.ts). */
  readonly owner: string;
  readonly status: number;
  /** As received, less what is never stored (hop-by-hop, per-request fields). */
  readonly headers: Record<string, string | string[]>;
  readonly body: Buffer;
  readonly policy: Policy;
  readonly semantics: ResponseSemantics;
  /** Request values of the Vary fields (4.1), `undefined` when absent. */
  readonly varyValues: ReadonlyMap<string, string | undefined>;
  readonly storedAt: number;
  /** Set while a background revalidation (stale-while-revalidate) runs. */
  revalidating?: boolean;
}

/** Per-entry bookkeeping beyond the body: keys, maps, the policy object. */
const ENTRY_OVERHEAD = 1024;

/**
 * Key of the variants of one URI in one partition: the authority and the target (RFC 9111
 * section 2), so that an answer built from one Host is never served to a client of another.
 */
export function primaryKey(partition: string, authority: string, target: string): string {
  return `${partition}\n${authority}\n${target}`;
}

/** Key of one variant: the primary key and the request's values of the Vary fields. */
export function entryKey(primary: string, varyValues: ReadonlyMap<string, string | undefined>): string {
  return varyValues.size === 0 ? primary : `${primary}\n${JSON.stringify([...varyValues])}`;
}

/** Bytes an entry is charged in the LRU. */
export function entrySize(entry: Omit<StoredResponse, 'size'>): number {
  let size = ENTRY_OVERHEAD + entry.body.length + entry.key.length * 2;
  for (const [name, value] of Object.entries(entry.headers))
    size += name.length + (Array.isArray(value) ? value.join('').length : value.length);
  return size;
}

/** The LRU of stored responses with its indexes. */
export interface EntryStore {
  set(entry: StoredResponse): boolean;
  /** The variants stored for one partition and target, touching them in the LRU. */
  variants(primary: string): StoredResponse[];
  delete(entry: StoredResponse): void;
  deletePath(path: string): number;
  deletePathPrefix(prefix: string): number;
  clear(): number;
  readonly bytes: number;
  readonly size: number;
}

/** Keys of one owner's entries, least recently used first, and the bytes they take. */
interface OwnerShare {
  keys: Set<string>;
  bytes: number;
}

/**
 * The per-owner budget: an insertion-ordered set per owner, re-inserted on use, so that its
 * first key is the owner's least recently used entry.
 */
function createOwnerShares(maxOwnerBytes: number, evict: (key: string) => void) {
  const owners = new Map<string, OwnerShare>();
  return {
    add(entry: StoredResponse): void {
      let share = owners.get(entry.owner);
      if (share === undefined) owners.set(entry.owner, (share = { keys: new Set(), bytes: 0 }));
      if (share.keys.has(entry.key)) return; // the same entry again: counted already
      share.keys.add(entry.key);
      share.bytes += entrySize(entry);
      // Never the entry just added: set() refused it if it alone is over the budget.
      for (const key of share.keys) {
        if (share.bytes <= maxOwnerBytes || key === entry.key) break;
        evict(key);
      }
    },
    remove(entry: StoredResponse): void {
      const share = owners.get(entry.owner);
      if (share === undefined || !share.keys.delete(entry.key)) return;
      share.bytes -= entrySize(entry);
      if (share.keys.size === 0) owners.delete(entry.owner);
    },
    touch(entry: StoredResponse): void {
      const keys = owners.get(entry.owner)?.keys;
      if (keys?.delete(entry.key) === true) keys.add(entry.key);
    },
    clear: () => owners.clear(),
  };
}

/**
 * A store holding at most `maxBytes` (see entrySize), and at most `maxOwnerBytes` per owner
 * (`maxBytes` when absent).
 */
export function createEntryStore(maxBytes: number, maxOwnerBytes = maxBytes): EntryStore {
  const byPrimary = new Map<string, Set<string>>();
  const byPath = new Map<string, Set<string>>();
  const shares = createOwnerShares(maxOwnerBytes, (key) => lru.delete(key));
  const index = (map: Map<string, Set<string>>, name: string, key: string) => {
    let keys = map.get(name);
    if (keys === undefined) map.set(name, (keys = new Set()));
    keys.add(key);
  };
  const unindex = (map: Map<string, Set<string>>, name: string, key: string) => {
    const keys = map.get(name);
    keys?.delete(key);
    if (keys?.size === 0) map.delete(name);
  };
  const lru = new LRUCache<string, StoredResponse>({
    // lru-cache refuses a zero bound; a cache of zero bytes stores nothing (set() checks).
    maxSize: Math.max(1, maxBytes),
    sizeCalculation: (entry) => entrySize(entry),
    dispose: (entry, key, reason) => {
      shares.remove(entry);
      // A replaced entry keeps its key in the indexes: the new value took its place.
      if (reason === 'set') return;
      unindex(byPrimary, entry.primary, key);
      unindex(byPath, entry.path, key);
    },
  });
  const deleteKeys = (keys: Iterable<string>) => {
    let count = 0;
    for (const key of [...keys]) if (lru.delete(key)) count++;
    return count;
  };
  return {
    set(entry) {
      const size = entrySize(entry);
      if (maxBytes === 0 || size > maxBytes || size > maxOwnerBytes) return false;
      lru.set(entry.key, entry);
      if (!lru.has(entry.key)) return false;
      index(byPrimary, entry.primary, entry.key);
      index(byPath, entry.path, entry.key);
      shares.add(entry);
      return true;
    },
    variants(primary) {
      const out: StoredResponse[] = [];
      for (const key of byPrimary.get(primary) ?? []) {
        const entry = lru.get(key);
        if (entry === undefined) continue;
        shares.touch(entry);
        out.push(entry);
      }
      return out;
    },
    delete(entry) {
      if (lru.peek(entry.key) === entry) lru.delete(entry.key);
    },
    deletePath(path) {
      return deleteKeys(byPath.get(path) ?? []);
    },
    deletePathPrefix(prefix) {
      let count = 0;
      for (const [path, keys] of [...byPath]) if (path.startsWith(prefix)) count += deleteKeys(keys);
      return count;
    },
    clear() {
      const count = lru.size;
      lru.clear();
      byPrimary.clear();
      byPath.clear();
      shares.clear();
      return count;
    },
    get bytes() {
      return lru.calculatedSize;
    },
    get size() {
      return lru.size;
    },
  };
}
