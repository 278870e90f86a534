/**
 * The admission bound (docs/scaling.md): a refused request is charged to no policy, and a
 * store failure makes each gateway count its share of the limit (limit ÷ live gateways, from
 * heartbeats in Redis), never the whole limit. Two limiters with their own connections stand
 * for two gateway processes; Redis is real (a server of the test's own where it is stopped).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { Redis } from 'ioredis';
import { DEFAULT_RATE_LIMITS, type RateLimitsConfig } from '../../../gateway/config/schema/rate-limit.ts';
import {
  createRateLimiter,
  type RateLimiter,
  type RateLimitSubject,
} from '../../../gateway/rate-limit/limiter.ts';
import { createRedisClient, waitForRedis } from '../../../shared/redis.ts';
import { justAfterHeartbeat, listening } from '../../support/fleet-watch.ts';
import { startOwnRedis, type OwnRedis } from '../../support/redis-server.ts';

const clients: Redis[] = [];
const limiters: RateLimiter[] = [];
const servers: OwnRedis[] = [];
afterAll(async () => {
  for (const limiter of limiters) await limiter.close();
  for (const client of clients) client.disconnect();
  for (const server of servers) await server.stop();
});

async function connect(url: string, keyPrefix: string, commandTimeoutMs = 2000): Promise<Redis> {
  const client = createRedisClient({ url, keyPrefix, commandTimeoutMs });
  client.on('error', () => {});
  clients.push(client);
  expect(await waitForRedis(client)).toBe(true);
  return client;
}

function limiterOf(config: RateLimitsConfig, redis: Redis): RateLimiter {
  const limiter = createRateLimiter(config, { redis });
  limiters.push(limiter);
  return limiter;
}

const subject = (over: Partial<RateLimitSubject> = {}): RateLimitSubject => ({
  method: 'GET',
  path: '/v1/orders',
  clientIp: '192.0.2.10',
  principal: { subject: 'u1', customerId: 'c1', scopes: [], authMethod: 'jwt' },
  ...over,
});

async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a refused request is charged to no policy', () => {
  it('the counter of the policy that refused stays at its limit', async () => {
    const redis = await connect(inject('redisUrl'), `${inject('redisPrefix')}${randomUUID()}:`);
    const limiter = limiterOf(
      { ...DEFAULT_RATE_LIMITS, policies: [{ name: 'default', key: 'principal', limit: 3, window: '60s' }] },
      redis,
    );
    const kinds = [];
    for (let i = 0; i < 10; i++) kinds.push((await limiter.check(subject())).kind);
    expect(kinds.filter((k) => k === 'allowed')).toHaveLength(3);
    expect(await redis.get('rl:p:default:60:jwt:u1')).toBe('3');
  });

  it('nor to the other policies it matched', async () => {
    const redis = await connect(inject('redisUrl'), `${inject('redisPrefix')}${randomUUID()}:`);
    const limiter = limiterOf(
      {
        ...DEFAULT_RATE_LIMITS,
        policies: [
          { name: 'per-ip', key: 'ip', limit: 2, window: '60s' },
          { name: 'per-customer', key: 'customer', limit: 100, window: '60s' },
        ],
      },
      redis,
    );
    const kinds = [];
    for (let i = 0; i < 8; i++) kinds.push((await limiter.check(subject())).kind);
    expect(kinds).toEqual(['allowed', 'allowed', ...Array(6).fill('limited')]);
    // Only the two admitted requests count against the customer.
    expect(await redis.get('rl:p:per-customer:60:c1')).toBe('2');
    expect(await redis.get('rl:p:per-ip:60:192.0.2.10')).toBe('2');
  });

  it('nor, with deny, to the policies whose store answered', async () => {
    const own = await startOwnRedis();
    servers.push(own);
    const prefix = `t${randomUUID()}:`;
    const redis = await connect(own.url, prefix, 200);
    const limiter = limiterOf(
      {
        ...DEFAULT_RATE_LIMITS,
        onStoreFailure: 'deny',
        policies: [
          { name: 'per-ip', key: 'ip', limit: 100, window: '60s' },
          { name: 'per-customer', key: 'customer', limit: 100, window: '60s' },
        ],
      },
      redis,
    );
    expect((await limiter.check(subject())).kind).toBe('allowed');
    // The customer's counter alone is made unusable: its script call fails, the ip's succeeds.
    await redis.set('rl:p:per-customer:60:c1', 'not a number');
    for (let i = 0; i < 4; i++) expect((await limiter.check(subject())).kind).toBe('unavailable');
    expect(await redis.get('rl:p:per-ip:60:192.0.2.10')).toBe('1');
  });
});

/** Counting in memory while Redis fails, 50 a minute per principal across the fleet. */
const SHARE_CONFIG: RateLimitsConfig = {
  ...DEFAULT_RATE_LIMITS,
  onStoreFailure: 'memory',
  policies: [{ name: 'default', key: 'principal', limit: 50, window: '60s' }],
};

describe('a store failure counts the share of the limit, not the whole limit', () => {
  it('two gateways lose Redis: together they admit the limit, not twice it', async () => {
    const own = await startOwnRedis();
    servers.push(own);
    const prefix = `t${randomUUID()}:`;
    const config = SHARE_CONFIG;
    const gateways = [
      limiterOf(config, await connect(own.url, prefix, 200)),
      limiterOf(config, await connect(own.url, prefix, 200)),
    ];
    // Both have heartbeat: each knows the fleet is two.
    await until(() => gateways.every((g) => g.status().fleetSize === 2), 'both gateways see a fleet of two');
    await own.stop();
    const decisions = await Promise.all(
      Array.from({ length: 200 }, (_, i) => gateways[i % 2]!.check(subject())),
    );
    const admitted = decisions.filter((d) => d.kind === 'allowed');
    expect(admitted.every((d) => d.store === 'memory')).toBe(true);
    // Each counts its share, 25: the fleet admits the limit, where each used to admit 50.
    expect(admitted).toHaveLength(50);
    for (const g of gateways) expect(g.status().fleetSize).toBe(2);
  });

  it('Redis stops right after a gateway joins: the older one already counts it', async () => {
    const own = await startOwnRedis();
    servers.push(own);
    const prefix = `t${randomUUID()}:`;
    const config = SHARE_CONFIG;
    const observer = await connect(own.url, prefix, 200);
    const older = limiterOf(config, await connect(own.url, prefix, 200));
    // Not asserted: the admissions below fail anyway if the older gateway does not hear joins.
    await listening(observer, `${prefix}rl:fleet-joined`, 1, 3000);
    // The older gateway's next heartbeat is then about 2 s away: only the join can tell it.
    expect(await justAfterHeartbeat(observer)).toBe(true);
    const newer = limiterOf(config, await connect(own.url, prefix, 200));
    await until(() => newer.status().fleetSize === 2, 'the newer gateway has joined', 1000);
    await own.stop();
    const decisions = await Promise.all(
      Array.from({ length: 200 }, (_, i) => [older, newer][i % 2]!.check(subject())),
    );
    const admitted = decisions.filter((d) => d.kind === 'allowed');
    expect(admitted.every((d) => d.store === 'memory')).toBe(true);
    // 25 each; an older gateway that still counted a fleet of one admitted 50 of its own.
    expect(admitted).toHaveLength(50);
    expect(older.status().fleetSize).toBe(2);
  });
});
