import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { Redis } from 'ioredis';
import { createRedisClient, waitForRedis } from '../../../shared/redis.ts';
import { DEFAULT_RATE_LIMITS } from '../../../gateway/config/schema/rate-limit.ts';
import type { RateLimitsConfig } from '../../../gateway/config/schema/rate-limit.ts';
import { createRateLimiter as openRateLimiter } from '../../../gateway/rate-limit/limiter.ts';
import type { RateLimiter, RateLimitSubject } from '../../../gateway/rate-limit/limiter.ts';
import { rateLimitHeaders, rateLimitProblem } from '../../../gateway/rate-limit/headers.ts';
import { startOwnRedis } from '../../support/redis-server.ts';
import type { OwnRedis } from '../../support/redis-server.ts';

const clients: Redis[] = [];
async function sharedRedis(): Promise<Redis> {
  const client = createRedisClient({
    url: inject('redisUrl'),
    keyPrefix: `${inject('redisPrefix')}${randomUUID()}:`,
  });
  clients.push(client);
  expect(await waitForRedis(client)).toBe(true);
  return client;
}
/** Every limiter made here is closed after the file: each has a Redis connection of its own. */
const limiters: RateLimiter[] = [];
const createRateLimiter = (...args: Parameters<typeof openRateLimiter>) => {
  const limiter = openRateLimiter(...args);
  limiters.push(limiter);
  return limiter;
};
afterAll(async () => {
  for (const limiter of limiters) await limiter.close();
  for (const c of clients) c.disconnect();
});

const principal = (customerId: string, subject = 'u1') => ({
  subject,
  customerId,
  scopes: [],
  authMethod: 'jwt' as const,
});
const request = (over: Partial<RateLimitSubject> = {}): RateLimitSubject => ({
  method: 'GET',
  path: '/v1/orders',
  clientIp: '192.0.2.1',
  principal: principal('c1'),
  ...over,
});

function config(
  policies: RateLimitsConfig['policies'],
  over: Partial<RateLimitsConfig> = {},
): RateLimitsConfig {
  return { ...DEFAULT_RATE_LIMITS, policies, ...over };
}

describe('policies against real Redis', () => {
  it('counts down with headers, then answers limited with a Retry-After matching the real reset', async () => {
    const redis = await sharedRedis();
    const limiter = createRateLimiter(
      config([{ name: 'default', key: 'principal', limit: 3, window: '60s' }]),
      {
        redis,
      },
    );
    const remaining: number[] = [];
    for (let i = 0; i < 3; i++) {
      const d = await limiter.check(request());
      expect(d.kind).toBe('allowed');
      if (d.kind !== 'unavailable') remaining.push(d.outcomes[0]?.remaining ?? -1);
    }
    expect(remaining).toEqual([2, 1, 0]);
    const limited = await limiter.check(request());
    expect(limited.kind).toBe('limited');
    if (limited.kind !== 'limited') return;
    const ttl = await redis.pttl(`rl:p:default:60:jwt:u1`);
    expect(ttl).toBeGreaterThan(0);
    expect(limited.retryAfterSeconds).toBe(Math.ceil(ttl / 1000));
    expect(limited.store).toBe('redis');

    const problem = rateLimitProblem(limited);
    expect(problem.status).toBe(429);
    expect(problem.headers['Retry-After']).toBe(String(limited.retryAfterSeconds));
    expect(problem.headers['RateLimit-Policy']).toBe('"default";q=3;w=60');
    expect(problem.headers['RateLimit']).toMatch(/^"default";r=0;t=(59|60)$/);
  });

  it('counts a request against every policy that matches it, by its own key', async () => {
    const limiter = createRateLimiter(
      config([
        { name: 'default', key: 'principal', limit: 100, window: '60s' },
        {
          name: 'order-writes',
          key: 'customer',
          limit: 2,
          window: '1m',
          match: { methods: ['POST'], path: '/v1/orders' },
        },
      ]),
      { redis: await sharedRedis() },
    );
    const read = await limiter.check(request());
    expect(read.kind === 'allowed' && read.outcomes.map((o) => o.name)).toEqual(['default']);
    // Two principals of one customer share the customer's write budget.
    const a = await limiter.check(request({ method: 'POST', principal: principal('c1', 'alice') }));
    const b = await limiter.check(
      request({ method: 'POST', path: '/v1/orders/x', principal: principal('c1', 'bob') }),
    );
    const c = await limiter.check(request({ method: 'POST', principal: principal('c1', 'carol') }));
    expect([a.kind, b.kind, c.kind]).toEqual(['allowed', 'allowed', 'limited']);
    expect(rateLimitHeaders(a.kind === 'allowed' ? a.outcomes : [])).toEqual({
      'RateLimit-Policy': '"default";q=100;w=60, "order-writes";q=2;w=60',
      RateLimit: expect.stringMatching(/^"default";r=99;t=60, "order-writes";r=1;t=60$/),
    });
    // Another customer, and a path that only shares a prefix, are not counted.
    expect((await limiter.check(request({ method: 'POST', principal: principal('c2') }))).kind).toBe(
      'allowed',
    );
    const other = await limiter.check(request({ method: 'POST', path: '/v1/orders-archive' }));
    expect(other.kind === 'allowed' && other.outcomes.map((o) => o.name)).toEqual(['default']);
  });

  it('two limiters sharing one Redis (two gateways) admit exactly the limit between them', async () => {
    const prefix = `${inject('redisPrefix')}${randomUUID()}:`;
    const one = createRedisClient({ url: inject('redisUrl'), keyPrefix: prefix });
    const two = createRedisClient({ url: inject('redisUrl'), keyPrefix: prefix });
    clients.push(one, two);
    expect(await waitForRedis(one)).toBe(true);
    expect(await waitForRedis(two)).toBe(true);
    const policies = [{ name: 'default', key: 'principal' as const, limit: 100, window: '60s' }];
    // What is under test is the count shared through Redis, so Redis must count every one of the
    // 400: on a loaded machine a burst of 400 can outlast the 250 ms store timeout, and the
    // limiter then rightly falls back to its local share (the outage tests below).
    const patient = config(policies, { storeTimeoutMs: 5000 });
    const first = createRateLimiter(patient, { redis: one });
    const second = createRateLimiter(patient, { redis: two });
    const decisions = await Promise.all(
      Array.from({ length: 400 }, (_, i) => (i % 2 === 0 ? first : second).check(request())),
    );
    expect(decisions.filter((d) => d.kind === 'allowed')).toHaveLength(100);
    expect(decisions.filter((d) => d.kind === 'limited')).toHaveLength(300);
    // Both replicas saw refusals: the limit is global, not split.
    expect(decisions.filter((d, i) => i % 2 === 0 && d.kind === 'limited').length).toBeGreaterThan(0);
    expect(decisions.filter((d, i) => i % 2 === 1 && d.kind === 'limited').length).toBeGreaterThan(0);
  });

  it('reconfigure applies a new limit at once and keeps what was counted', async () => {
    const limiter = createRateLimiter(
      config([{ name: 'default', key: 'principal', limit: 5, window: '60s' }]),
      {
        redis: await sharedRedis(),
      },
    );
    for (let i = 0; i < 3; i++) await limiter.check(request());
    limiter.reconfigure(config([{ name: 'default', key: 'principal', limit: 4, window: '60s' }]));
    expect((await limiter.check(request())).kind).toBe('allowed');
    expect((await limiter.check(request())).kind).toBe('limited');
    limiter.reconfigure(config([{ name: 'default', key: 'principal', limit: 50, window: '60s' }]));
    const d = await limiter.check(request());
    // Five admitted so far (3, then 1, then this one): the refused request was charged to nothing.
    expect(d.kind === 'allowed' && d.outcomes[0]?.remaining).toBe(45);
  });

  it('throttles failed authentication per address, before any credential is looked at', async () => {
    const limiter = createRateLimiter(
      config([], { authFailures: { limit: 3, window: '60s', newCredentials: 0 } }),
      { redis: await sharedRedis() },
    );
    for (let i = 0; i < 3; i++)
      expect((await limiter.countAuthAttempt('198.51.100.7', `guess-${i}`)).refusal).toBeUndefined();
    const blocked = await limiter.countAuthAttempt('198.51.100.7', 'guess-3');
    expect(blocked.refusal?.kind).toBe('limited');
    expect(blocked.refusal?.retryAfterSeconds).toBeGreaterThan(0);
    expect((await limiter.countAuthAttempt('198.51.100.8', 'guess-4')).refusal).toBeUndefined();
  });

  it('over the limit, verifies new credentials within their budget and refuses one that failed', async () => {
    const limiter = createRateLimiter(
      config([], { authFailures: { limit: 2, window: '60s', newCredentials: 2 } }),
      { redis: await sharedRedis() },
    );
    const ip = '198.51.100.9';
    for (let i = 0; i < 2; i++) (await limiter.countAuthAttempt(ip, `guess-${i}`)).failed();
    // A guess that failed here is refused unverified; a credential never seen here is verified.
    expect((await limiter.countAuthAttempt(ip, 'guess-0')).refusal?.kind).toBe('limited');
    const valid = await limiter.countAuthAttempt(ip, 'valid');
    expect(valid.refusal).toBeUndefined();
    await valid.refund(); // it verified: it spends neither budget
    const third = await limiter.countAuthAttempt(ip, 'guess-2');
    expect(third.refusal).toBeUndefined();
    third.failed();
    expect((await limiter.countAuthAttempt(ip, 'guess-3')).refusal).toBeUndefined();
    // Both new-credential verifications of the window spent on guesses: the next one waits.
    expect((await limiter.countAuthAttempt(ip, 'valid-2')).refusal?.kind).toBe('limited');
  });

  it('counts IPv6 clients by their /64 (rateLimits.ipv6PrefixLength), IPv4 by address', async () => {
    const limiter = createRateLimiter(
      config([{ name: 'by-ip', key: 'ip', limit: 2, window: '60s' }], {
        authFailures: { limit: 2, window: '60s', newCredentials: 0 },
      }),
      { redis: await sharedRedis() },
    );
    const kinds = async (ips: string[]) => {
      const out = [];
      for (const clientIp of ips) out.push((await limiter.check(request({ clientIp }))).kind);
      return out;
    };
    expect(await kinds(['2001:db8:1:2::1', '2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::3'])).toEqual([
      'allowed',
      'allowed',
      'limited',
    ]);
    expect(await kinds(['2001:db8:1:3::1', '192.0.2.10', '192.0.2.11'])).toEqual([
      'allowed',
      'allowed',
      'allowed',
    ]);
    for (const ip of ['2001:db8:9:9::1', '2001:db8:9:9::2'])
      expect((await limiter.countAuthAttempt(ip, ip)).refusal).toBeUndefined();
    expect((await limiter.countAuthAttempt('2001:db8:9:9:ffff::7', 'x')).refusal?.kind).toBe('limited');
  });

  it('limits requests refused before anyone is identified, per address (rateLimits.anonymous)', async () => {
    const limiter = createRateLimiter(config([], { anonymous: { limit: 3, window: '60s' } }), {
      redis: await sharedRedis(),
    });
    for (let i = 0; i < 3; i++) expect(await limiter.countAnonymous('198.51.100.20')).toBeUndefined();
    const over = await limiter.countAnonymous('198.51.100.20');
    expect(over?.retryAfterSeconds).toBeGreaterThan(0);
    expect(over?.outcomes[0]?.name).toBe('anonymous');
    expect(await limiter.countAnonymous('198.51.100.21')).toBeUndefined();
  });

  it('counts attempts atomically across replicas, and a refund gives one back', async () => {
    const prefix = `${inject('redisPrefix')}${randomUUID()}:`;
    // Exact counting is the point: no reply may time out into the memory fallback.
    const a = createRedisClient({ url: inject('redisUrl'), keyPrefix: prefix, commandTimeoutMs: 2000 });
    const b = createRedisClient({ url: inject('redisUrl'), keyPrefix: prefix, commandTimeoutMs: 2000 });
    clients.push(a, b);
    expect(await waitForRedis(a)).toBe(true);
    expect(await waitForRedis(b)).toBe(true);
    const settings = config([], { authFailures: { limit: 20, window: '60s', newCredentials: 0 } });
    const replicaA = createRateLimiter(settings, { redis: a });
    const replicaB = createRateLimiter(settings, { redis: b });
    const ip = '198.51.100.77';
    // 60 at once, half through each replica: exactly the limit is admitted.
    const attempts = await Promise.all(
      Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? replicaA : replicaB).countAuthAttempt(ip, `g${i}`)),
    );
    expect(attempts.filter((attempt) => attempt.refusal === undefined)).toHaveLength(20);
    // Refunds (credentials that verified) make room for exactly as many more.
    const other = '198.51.100.78';
    const admitted = await Promise.all(
      Array.from({ length: 20 }, (_, i) => replicaA.countAuthAttempt(other, `g${i}`)),
    );
    for (const attempt of admitted.slice(0, 2)) await attempt.refund();
    expect((await replicaB.countAuthAttempt(other, 'n1')).refusal).toBeUndefined();
    expect((await replicaB.countAuthAttempt(other, 'n2')).refusal).toBeUndefined();
    expect((await replicaA.countAuthAttempt(other, 'n3')).refusal?.kind).toBe('limited');
  });
});

describe('store failure', () => {
  let own: OwnRedis;
  let redis: Redis;
  beforeAll(async () => {
    own = await startOwnRedis();
  });
  afterEach(async () => {
    redis?.disconnect();
    // A fresh server for the next test, whatever state this one left it in.
    await own.stop();
    await own.start();
  });
  afterAll(async () => {
    await own.stop();
  });

  async function connected(): Promise<Redis> {
    redis = createRedisClient({ url: own.url, keyPrefix: `t${randomUUID()}:`, commandTimeoutMs: 50 });
    await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
    return redis;
  }
  const policies = [{ name: 'default', key: 'principal' as const, limit: 2, window: '60s' }];

  for (const outage of ['stopped', 'frozen'] as const) {
    it(`memory: falls back to per-instance limits when Redis is ${outage}, then returns to Redis`, async () => {
      const client = await connected();
      const limiter = createRateLimiter(config(policies, { onStoreFailure: 'memory' }), { redis: client });
      expect((await limiter.check(request())).kind).toBe('allowed');
      if (outage === 'stopped') await own.stop();
      else own.freeze();

      const started = performance.now();
      const during = [
        await limiter.check(request()),
        await limiter.check(request()),
        await limiter.check(request()),
      ];
      const elapsed = performance.now() - started;
      expect(during.map((d) => d.kind)).toEqual(['allowed', 'allowed', 'limited']);
      expect(during.every((d) => d.kind !== 'unavailable' && d.store === 'memory')).toBe(true);
      // Three checks, each bounded by the 50 ms command timeout (not by a TCP timeout).
      expect(elapsed).toBeLessThan(1500);
      expect(limiter.status()).toMatchObject({ backend: 'redis', degraded: true });

      if (outage === 'stopped') await own.start();
      else own.thaw();
      await new Promise<void>((resolve) => {
        const poll = () => (client.status === 'ready' ? resolve() : setTimeout(poll, 20));
        poll();
      });
      let back = await limiter.check(request());
      for (let i = 0; i < 20 && back.kind !== 'unavailable' && back.store !== 'redis'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        back = await limiter.check(request());
      }
      expect(back.kind !== 'unavailable' && back.store).toBe('redis');
    });
  }

  it('allow: lets requests through without counting; deny: answers unavailable', async () => {
    const client = await connected();
    const allow = createRateLimiter(config(policies, { onStoreFailure: 'allow' }), { redis: client });
    const deny = createRateLimiter(config(policies, { onStoreFailure: 'deny' }), { redis: client });
    await own.stop();
    const allowed = await Promise.all(Array.from({ length: 5 }, () => allow.check(request())));
    expect(allowed.every((d) => d.kind === 'allowed' && d.outcomes.length === 0)).toBe(true);
    expect((await deny.check(request())).kind).toBe('unavailable');
    // The failed-authentication throttle keeps counting in memory whatever the mode.
    for (let i = 0; i < 20; i++) {
      const attempt = await deny.countAuthAttempt('203.0.113.9', 'guess');
      expect(attempt.refusal).toBeUndefined();
      attempt.failed();
    }
    expect((await deny.countAuthAttempt('203.0.113.9', 'guess')).refusal?.kind).toBe('limited');
  });
});

describe('without Redis', () => {
  it('limits per process', async () => {
    const limiter = createRateLimiter(config([{ name: 'default', key: 'ip', limit: 1, window: '10s' }]), {});
    expect((await limiter.check(request())).kind).toBe('allowed');
    const second = await limiter.check(request());
    expect(second.kind).toBe('limited');
    expect(limiter.status()).toEqual({
      backend: 'memory',
      degraded: false,
      storeFailures: 0,
      fleetSize: 1,
      onStoreFailure: 'memory',
    });
  });
});
