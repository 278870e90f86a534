/**
 * The batched fixed-window counter (gateway/rate-limit/redis-counter.ts) against a real Redis:
 * the counts asked for in one event-loop turn go out as one script call, each count is exact
 * even for a key repeated within the batch, and a failure reaches every caller of its batch.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRedisCounter } from '../../../gateway/rate-limit/redis-counter.ts';
import { createRedisClient, waitForRedis } from '../../../shared/redis.ts';

let redis: Redis;
let prefix: string;
const clients: Redis[] = [];

function client(): Redis {
  const made = createRedisClient({ url: inject('redisUrl'), keyPrefix: prefix, commandTimeoutMs: 2000 });
  clients.push(made);
  return made;
}

beforeAll(async () => {
  prefix = `${inject('redisPrefix')}${randomUUID()}:`;
  redis = client();
  expect(await waitForRedis(redis)).toBe(true);
});

afterAll(() => {
  for (const made of clients) made.disconnect();
});

/**
 * Watches, through MONITOR, the script calls that touch this file's keys: Redis's own record
 * of what each client sent, whatever ioredis does inside.
 */
async function watchScriptCalls(): Promise<{ calls(): Promise<number>; stop(): void }> {
  const monitor = await createRedisClient({ url: inject('redisUrl') }).monitor();
  let calls = 0;
  monitor.on('monitor', (_time: string, args: string[]) => {
    const command = args[0]?.toLowerCase();
    if ((command === 'evalsha' || command === 'eval') && args.some((arg) => arg.startsWith(prefix)))
      calls += 1;
  });
  return {
    async calls() {
      // MONITOR lines arrive just after the replies: a ping through it orders them.
      await redis.ping();
      await new Promise((resolve) => setTimeout(resolve, 200));
      return calls;
    },
    stop: () => monitor.disconnect(),
  };
}

describe('batched Redis counter', () => {
  it('sends the counts of one turn as one call, each exact', async () => {
    const counter = createRedisCounter(redis);
    const watch = await watchScriptCalls();
    try {
      const results = await Promise.all([
        ...Array.from({ length: 20 }, () => counter.add('a', 60, 1, 1000)),
        ...Array.from({ length: 5 }, () => counter.add('b', 60, 2, 1000)),
      ]);
      expect(await watch.calls()).toBe(1);
      expect(results.slice(0, 20).map((r) => r.consumed)).toEqual(
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      expect(results.slice(20).map((r) => r.consumed)).toEqual([2, 4, 6, 8, 10]);
      for (const result of results) {
        expect(result.msBeforeNext).toBeGreaterThan(58_000);
        expect(result.msBeforeNext).toBeLessThanOrEqual(60_000);
      }
      // A later turn is a later call, on the same counters; a negative count gives back.
      expect((await counter.add('a', 60, -1, 1000)).consumed).toBe(19);
      expect(await watch.calls()).toBe(2);
    } finally {
      watch.stop();
    }
  });

  it('rejects every count of a batch whose call fails, and works again once Redis does', async () => {
    const own = client();
    expect(await waitForRedis(own)).toBe(true);
    const counter = createRedisCounter(own);
    const ended = new Promise((resolve) => own.once('end', resolve));
    own.disconnect();
    await ended;
    const outcomes = await Promise.allSettled([counter.add('c', 60, 1, 1000), counter.add('d', 60, 1, 1000)]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    await own.connect();
    expect(await waitForRedis(own)).toBe(true);
    expect((await counter.add('c', 60, 1, 1000)).consumed).toBe(1);
  });
});
