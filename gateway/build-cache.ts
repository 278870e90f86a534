/**
 * The shared HTTP cache of one gateway and its invalidation channel: built once at start and
 * kept across reloads (build.ts says why), closed with the gateway's lifecycle.
 */
import type { Logger } from 'pino';
import type { Lifecycle } from '../shared/lifecycle.ts';
import { createSubscriber, type RedisClient } from '../shared/redis.ts';
import { createHttpCache, type HttpCache } from './cache/engine/http-cache.ts';
import type { CacheConfig } from './config/schema/cache.ts';

export interface CacheDeps {
  /** Without Redis the cache is this process's alone: no invalidation reaches other replicas. */
  redis: RedisClient | undefined;
  log: Logger;
  now?: (() => number) | undefined;
}

export async function buildCache(
  config: CacheConfig,
  deps: CacheDeps,
  lifecycle: Lifecycle,
): Promise<HttpCache> {
  const { redis, log, now } = deps;
  // A subscriber connection can only listen: invalidations need a second one. ioredis does
  // not prefix channel names, so the deployment's key prefix goes into the channel itself.
  const subscriber = redis === undefined ? undefined : createSubscriber(redis);
  if (subscriber !== undefined)
    lifecycle.defer('cache invalidation subscriber', () => subscriber.disconnect());
  const cache = createHttpCache(config, {
    redis: redis === undefined || subscriber === undefined ? undefined : { publisher: redis, subscriber },
    channel: `${redis?.options.keyPrefix ?? 'portico:'}cache-invalidation`,
    log,
    ...(now === undefined ? {} : { now }),
  });
  lifecycle.defer('cache', () => cache.close());
  // Until it hears invalidations the cache neither serves nor stores; give it a moment.
  if (redis !== undefined && !(await cache.whenReady(2000))) {
    log.warn('cache invalidation channel not subscribed yet: the cache is bypassed until it is');
  }
  return cache;
}
