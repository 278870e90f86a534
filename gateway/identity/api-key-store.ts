/**
 * What we remember about API keys: a record per minted key (for `apikey list`) and the set of
 * revoked key ids, checked on every request. In Redis when configured, so every gateway
 * replica sees a revocation at once; otherwise in memory, fed from a JSON-lines file in the
 * data dir that the `apikey` command appends to and the gateway re-reads when it changes.
 */
import { appendFileSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisClient } from '../../shared/redis.ts';

export interface ApiKeyRecord {
  id: string;
  customerId: string;
  scopes: string[];
  createdAt: string;
  revokedAt?: string;
}

export interface ApiKeyStore {
  add(record: ApiKeyRecord): Promise<void>;
  /** Whether a key with this id was minted through this store (revoked or not). */
  has(id: string): Promise<boolean>;
  /** Marks `id` revoked (also when no record of it exists); resolves whether a record existed. */
  revoke(id: string): Promise<boolean>;
  /** Rejects when the store cannot answer: the caller fails closed. */
  isRevoked(id: string): Promise<boolean>;
  list(): Promise<ApiKeyRecord[]>;
  close(): void;
}

/** Redis keys, under whatever `keyPrefix` the client was created with. */
export const REDIS_RECORDS_KEY = 'apikeys:records';
export const REDIS_REVOKED_KEY = 'apikeys:revoked';

/** Store in Redis; `redis` should fail fast when down (enableOfflineQueue: false, commandTimeout). */
export function createRedisApiKeyStore(redis: RedisClient): ApiKeyStore {
  return {
    async add(record) {
      await redis.hset(REDIS_RECORDS_KEY, record.id, JSON.stringify(record));
    },
    async has(id) {
      return (await redis.hexists(REDIS_RECORDS_KEY, id)) === 1;
    },
    async revoke(id) {
      const revokedAt = new Date().toISOString();
      // Two keys, so two slots in a cluster: not one MULTI (CROSSSLOT there). The revocation
      // is the SADD; a failure of either rejects.
      const [existing] = await Promise.all([
        redis.hget(REDIS_RECORDS_KEY, id),
        redis.sadd(REDIS_REVOKED_KEY, id),
      ]);
      if (existing === null) return false;
      const record = { ...(JSON.parse(existing) as ApiKeyRecord), revokedAt };
      await redis.hset(REDIS_RECORDS_KEY, id, JSON.stringify(record));
      return true;
    },
    async isRevoked(id) {
      return (await redis.sismember(REDIS_REVOKED_KEY, id)) === 1;
    },
    async list() {
      const [records, revoked] = await Promise.all([
        redis.hvals(REDIS_RECORDS_KEY),
        redis.smembers(REDIS_REVOKED_KEY),
      ]);
      const revokedIds = new Set(revoked);
      return records
        .map((text) => JSON.parse(text) as ApiKeyRecord)
        .map((r) => (revokedIds.has(r.id) && r.revokedAt === undefined ? { ...r, revokedAt: 'unknown' } : r))
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    },
    close() {},
  };
}

type FileEntry = ({ op: 'create' } & ApiKeyRecord) | { op: 'revoke'; id: string; at: string };

/**
 * Store in `<dataDir>/apikeys.jsonl` plus memory. With `pollMs`, the file is re-read when its
 * size or mtime changes, so a revocation made by the CLI reaches a running gateway within
 * that interval; lookups never touch the disk.
 */
export function createFileApiKeyStore(dataDir: string, options: { pollMs?: number } = {}): ApiKeyStore {
  const file = join(dataDir, 'apikeys.jsonl');
  let records = new Map<string, ApiKeyRecord>();
  let revoked = new Set<string>();
  let seen = '';

  function load(): void {
    let text: string;
    let signature: string;
    try {
      const stat = statSync(file);
      signature = `${stat.size}:${stat.mtimeMs}`;
      if (signature === seen) return;
      text = readFileSync(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    const nextRecords = new Map<string, ApiKeyRecord>();
    const nextRevoked = new Set<string>();
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      let entry: FileEntry;
      try {
        entry = JSON.parse(line) as FileEntry;
      } catch {
        continue; // A line cut by a crash; the ones around it still count.
      }
      if (entry.op === 'create') {
        const { id, customerId, scopes, createdAt } = entry;
        nextRecords.set(id, { id, customerId, scopes, createdAt });
      } else if (entry.op === 'revoke') {
        nextRevoked.add(entry.id);
        const record = nextRecords.get(entry.id);
        if (record !== undefined) nextRecords.set(entry.id, { ...record, revokedAt: entry.at });
      }
    }
    records = nextRecords;
    revoked = nextRevoked;
    seen = signature;
  }

  function append(entry: FileEntry): void {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    // One short line per append (O_APPEND): concurrent writers never interleave within it.
    appendFileSync(file, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
    load();
  }

  load();
  const timer =
    options.pollMs === undefined
      ? undefined
      : setInterval(() => {
          try {
            load();
          } catch {
            // Keep the last good view; the next tick tries again.
          }
        }, options.pollMs).unref();

  return {
    add(record) {
      append({ op: 'create', ...record });
      return Promise.resolve();
    },
    has(id) {
      load();
      return Promise.resolve(records.has(id));
    },
    revoke(id) {
      load();
      const existed = records.has(id);
      append({ op: 'revoke', id, at: new Date().toISOString() });
      return Promise.resolve(existed);
    },
    isRevoked(id) {
      return Promise.resolve(revoked.has(id));
    },
    list() {
      load();
      return Promise.resolve([...records.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt)));
    },
    close() {
      if (timer !== undefined) clearInterval(timer);
    },
  };
}
