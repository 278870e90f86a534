/**
 * One way to connect to Redis for every part of Portico that uses it (rate limits,
 * revocations, cache invalidation): fail fast instead of queueing.
 *
 * With ioredis defaults a down Redis makes commands wait in the offline queue, so a request
 * would hang; with the offline queue off and a short command timeout, a down or frozen Redis
 * is an error within `commandTimeoutMs`, which each caller answers by its own policy.
 */
import { Redis } from 'ioredis';

export interface RedisOptions {
  url: string;
  /** Prepended to every key, so that deployments and test runs never share keys. */
  keyPrefix?: string;
  commandTimeoutMs?: number;
}

export function createRedisClient(options: RedisOptions): Redis {
  return new Redis(options.url, {
    keyPrefix: options.keyPrefix ?? 'portico:',
    enableOfflineQueue: false,
    commandTimeout: options.commandTimeoutMs ?? 50,
    maxRetriesPerRequest: 0,
    // Keep trying to come back, at most every 2 s: the gateway returns to Redis by itself.
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    connectTimeout: 2000,
    lazyConnect: false,
    // Commands issued in one event-loop turn (by every request in flight) go out in one socket
    // write: a write per command (two per request: failed-auth peek, rate-limit count) was the
    // largest single cost of the gateway under load. Timeouts and fail-fast apply per command.
    enableAutoPipelining: true,
  });
}

/** Resolves when the client is ready, or after `timeoutMs` (the caller then runs degraded). */
export async function waitForRedis(client: Redis, timeoutMs = 2000): Promise<boolean> {
  if (client.status === 'ready') return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      resolve(false);
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    client.once('ready', onReady);
  });
}
