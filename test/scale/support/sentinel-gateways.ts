/**
 * What the Sentinel failover tests share: the admission tests' gateway environment and rate
 * limits on a fresh key prefix (the limit per customer, `onStoreFailure: memory`, failed
 * authentications never in the way), and a connection of the test's own to whichever node is
 * master, to read the keys under a prefix.
 */
import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { createRedisConnection, parseHostPorts, type RedisClient } from '../../../shared/redis.ts';
import type { OwnRedisSentinel } from '../../support/redis-sentinel.ts';

export interface SentinelGateways {
  prefix: string;
  env: Record<string, string>;
  rateLimits: Record<string, unknown>;
}

export function sentinelGateways(sentinel: OwnRedisSentinel, limit: number): SentinelGateways {
  const prefix = `${inject('redisPrefix')}${randomUUID()}:`;
  return {
    prefix,
    env: {
      REDIS_SENTINELS: sentinel.addresses,
      REDIS_SENTINEL_NAME: sentinel.name,
      PORTICO_REDIS_PREFIX: prefix,
    },
    rateLimits: {
      onStoreFailure: 'memory',
      authFailures: { limit: 1_000_000, window: '60s' },
      policies: [{ name: 'default', key: 'customer', limit, window: '60s' }],
    },
  };
}

/** The test's connection to the master of `sentinel`, its keys under `prefix`; errors ignored. */
export function sentinelObserver(sentinel: OwnRedisSentinel, prefix: string): RedisClient {
  const observer = createRedisConnection(
    {
      mode: 'sentinel',
      sentinels: parseHostPorts('REDIS_SENTINELS', sentinel.addresses),
      name: sentinel.name,
    },
    { keyPrefix: prefix, commandTimeoutMs: 2000 },
  );
  observer.on('error', () => {});
  return observer;
}
