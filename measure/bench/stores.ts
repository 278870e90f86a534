/**
 * The bench's own PostgreSQL database and Redis key prefix, created for one run and removed
 * at its end, so that a bench never touches a developer's or a test run's data.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import postgres from 'postgres';

export interface BenchStores {
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  /** `PostgreSQL 17.2 …`, `Redis 7.2.4`: printed with the machine facts. */
  versions: string;
  /** Drops the database and deletes the prefix's keys; safe to call twice. */
  remove(): Promise<void>;
}

export class StoreMissing extends Error {}

const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.href;
  } catch {
    return '(unparsable URL)';
  }
}

async function connectPostgres(adminUrl: string) {
  const admin = postgres(adminUrl, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    const [row] = await admin<{ version: string }[]>`select current_setting('server_version') as version`;
    return { admin, version: row?.version ?? '?' };
  } catch (error) {
    await admin.end({ timeout: 1 }).catch(() => {});
    throw new StoreMissing(
      `PostgreSQL not reachable at ${withoutPassword(adminUrl)} (${(error as Error).message}). ` +
        'Start it (user postgres, trust auth on 127.0.0.1:5432) or set DATABASE_URL.',
    );
  }
}

async function connectRedis(url: string): Promise<{ redis: Redis; version: string }> {
  const redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 3000,
    retryStrategy: () => null,
  });
  redis.on('error', () => {}); // reported below, once
  try {
    await redis.connect();
    const info = await redis.info('server');
    return { redis, version: /redis_version:(\S+)/.exec(info)?.[1] ?? '?' };
  } catch (error) {
    redis.disconnect();
    throw new StoreMissing(
      `Redis not reachable at ${withoutPassword(url)} (${(error as Error).message}). ` +
        'Start it on 127.0.0.1:6379 or set REDIS_URL.',
    );
  }
}

/** Deletes every key under `prefix`, in batches (SCAN, never KEYS on a shared server). */
async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

/** `label` names the database and prefix (`portico_<label>_…`), so a leftover says whose it is. */
export async function createBenchStores(env: NodeJS.ProcessEnv, label = 'bench'): Promise<BenchStores> {
  const adminUrl = env['DATABASE_URL'] || DEFAULT_DATABASE_URL;
  const redisUrl = env['REDIS_URL'] || DEFAULT_REDIS_URL;
  const suffix = randomBytes(4).toString('hex');
  const name = `portico_${label}_${suffix}`;
  const redisPrefix = `portico-${label}-${suffix}:`;

  const { admin, version: pgVersion } = await connectPostgres(adminUrl);
  let redis: Redis;
  let redisVersion: string;
  try {
    ({ redis, version: redisVersion } = await connectRedis(redisUrl));
  } catch (error) {
    await admin.end({ timeout: 1 });
    throw error;
  }
  await admin.unsafe(`create database "${name}"`);
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${name}`;

  let removed = false;
  return {
    databaseUrl: databaseUrl.href,
    redisUrl,
    redisPrefix,
    versions: `PostgreSQL ${pgVersion}, Redis ${redisVersion}`,
    async remove() {
      if (removed) return;
      removed = true;
      // `with (force)` ends the service's connections if it is somehow still connected.
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end({ timeout: 2 });
      await deleteKeys(redis, redisPrefix);
      redis.disconnect();
    },
  };
}
