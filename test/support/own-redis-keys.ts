/**
 * A Redis client on keys of its own (a fresh prefix under the run's), for a test that needs its
 * counts exact: a command may take 2 s before it fails, so a reply late under a loaded machine
 * never makes the gateway fall back to memory (the 50 ms default; rate-limit-processes.test.ts
 * says why). Throws when Redis does not answer; the caller quits the client.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { inject } from 'vitest';
import { createRedisClient, waitForRedis } from '../../shared/redis.ts';

export async function redisOnOwnKeys(): Promise<Redis> {
  const redis = createRedisClient({
    url: inject('redisUrl'),
    keyPrefix: `${inject('redisPrefix')}${randomUUID()}:`,
    commandTimeoutMs: 2000,
  });
  if (!(await waitForRedis(redis))) {
    await redis.quit().catch(() => {});
    throw new Error('Redis did not answer');
  }
  return redis;
}
