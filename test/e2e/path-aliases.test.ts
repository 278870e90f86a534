/**
 * One spelling per path, from the attacker's side: over real HTTPS with real tokens, through the
 * gateway (limits and invalidations in real Redis) to the service on real PostgreSQL. Every alias
 * of a path (case, trailing slash, empty segment, needless percent-encoding, an upper-case UUID)
 * is a 404, so it can neither slip past a path-matched limit nor change what the cache holds
 * under the canonical spelling. Unauthenticated callers are limited by address, and cannot flush
 * the cache of anyone else.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { createRedisClient, waitForRedis } from '../../shared/redis.ts';
import { startPortico, type Portico } from './support/portico.ts';

const ORDER = { items: [{ sku: 'SKU-1', quantity: 2, unit_price: 1250 }], currency: 'EUR' };
const hex = () => randomBytes(4).toString('hex');
const CUSTOMER = ['orders:read', 'orders:write', 'payments:write', 'invoices:read'];

/** The production routes: `/v1`, and the OpenAPI document without authentication. */
const routes = (upstream: string) => [
  { prefix: '/v1', upstream, cache: true },
  { prefix: '/v1/openapi.json', upstream, auth: 'none', cache: true },
];

let redis: Redis;
let portico: Portico;

beforeAll(async () => {
  redis = createRedisClient({
    url: inject('redisUrl'),
    keyPrefix: `${inject('redisPrefix')}aliases-${hex()}:`,
  });
  // Counted in Redis from the first request: a limit half in memory, half in Redis is not exact.
  expect(await waitForRedis(redis, 5000)).toBe(true);
  portico = await startPortico({
    redis,
    config: (upstream) => ({
      routes: routes(upstream),
      // Small enough that 250 copies of the OpenAPI document (~56 KB each) would evict it all.
      cache: { maxBytes: 4 * 1024 * 1024 },
      rateLimits: {
        // A loaded machine can take more than the default 50 ms to answer; exactness is the point.
        storeTimeoutMs: 2000,
        policies: [
          { name: 'default', key: 'principal', limit: 100, window: '60s' },
          {
            name: 'order-writes',
            key: 'principal',
            limit: 5,
            window: '60s',
            match: { methods: ['POST'], path: '/v1/orders' },
          },
        ],
      },
    }),
  });
});
afterAll(async () => {
  await portico?.close();
  redis?.disconnect();
});

async function newOrder(token: string): Promise<string> {
  const created = await portico.call('POST', '/v1/orders', { token, body: ORDER });
  expect(created.status).toBe(201);
  return created.body.id as string;
}

/** What the service holds now, past the cache (the request's no-store). */
async function truth(path: string, token: string) {
  return portico.call('GET', path, { token, headers: { 'cache-control': 'no-store' } });
}

describe('path aliases and path-matched limits', () => {
  it.each(['/v1/ORDERS', '/v1/Orders', '/v1/orders/', '/v1//orders', '/v1/%6Frders', '/v1/orders%2F'])(
    'POST %s gets no order past the 5/min order-writes policy',
    async (alias) => {
      const token = await portico.token(`alias_${hex()}`);
      const statuses = [];
      for (let i = 0; i < 6; i++)
        statuses.push((await portico.call('POST', '/v1/orders', { token, body: ORDER })).status);
      expect(statuses).toEqual([201, 201, 201, 201, 201, 429]);
      for (let i = 0; i < 3; i++) {
        const sneaked = await portico.call('POST', alias, { token, body: ORDER });
        expect(sneaked.status).toBe(404);
        expect(sneaked.body.code).toBe('ERR_ROUTE_NOT_FOUND');
      }
      const orders = await portico.call('GET', '/v1/orders?limit=100', { token });
      expect(orders.body.data).toHaveLength(5);
    },
  );
});

describe('a policy path no request can be spelled as', () => {
  it('is a config error naming the canonical spelling', () => {
    const policy = (path: string) => ({
      rateLimits: { policies: [{ name: 'p', limit: 5, match: { path } }] },
    });
    expect(() => parseConfig(policy('/v1/%6Frders'))).toThrow(/match\.path: .*write "\/v1\/orders"/);
    expect(() => parseConfig(policy('/v1//orders'))).toThrow(/match\.path/);
    expect(() => parseConfig(policy('/v1/customers/cus%3a1'))).toThrow(/write "\/v1\/customers\/cus:1"/);
    // A trailing slash was always allowed and means the same prefix.
    expect(() => parseConfig(policy('/v1/orders/'))).not.toThrow();
  });
});

describe('path aliases and the cache', () => {
  const aliases: [string, (id: string) => string][] = [
    ['upper-case path', (id) => `/v1/ORDERS/${id.toUpperCase()}`],
    ['upper-case UUID', (id) => `/v1/orders/${id.toUpperCase()}`],
    ['trailing slash', (id) => `/v1/orders/${id}/`],
    ['encoded letter', (id) => `/v1/%6Frders/${id}`],
    ['encoded first id character', (id) => `/v1/orders/%${id.charCodeAt(0).toString(16)}${id.slice(1)}`],
  ];

  it.each(aliases)('a PATCH by %s never leaves the canonical read stale', async (_name, alias) => {
    const token = await portico.token(`stale_${hex()}`);
    const id = await newOrder(token);
    const path = `/v1/orders/${id}`;
    await portico.call('GET', path, { token });
    expect((await portico.call('GET', path, { token })).headers['cache-status']).toMatch(/^Portico; hit/);

    const patched = await portico.call('PATCH', alias(id), { token, body: { status: 'cancelled' } });
    expect(patched.status).toBe(404);
    const cached = await portico.call('GET', path, { token });
    expect(cached.body.status).toBe((await truth(path, token)).body.status);
  });

  it('an upper-case UUID names no order: 404 to read, like an id that does not exist', async () => {
    const token = await portico.token(`upper_${hex()}`);
    const id = await newOrder(token);
    const read = await portico.call('GET', `/v1/orders/${id.toUpperCase()}`, { token });
    expect(read.status).toBe(404);
    expect(read.body.code).toBe('ERR_NOT_FOUND');
    expect((await portico.call('GET', `/v1/orders/${id}`, { token })).status).toBe(200);
  });
});

describe("customer ids with ':'", () => {
  it('have one spelling, the literal one: the percent-encoded forms are 404', async () => {
    const id = `cus:${hex()}`;
    const token = await portico.token(id);
    expect((await portico.call('GET', `/v1/customers/${id}`, { token })).status).toBe(200);
    expect((await portico.call('GET', `/v1/customers/${id}/invoices`, { token })).status).toBe(200);
    for (const encoded of [id.replace(':', '%3A'), id.replace(':', '%3a')]) {
      for (const path of [`/v1/customers/${encoded}`, `/v1/customers/${encoded}/invoices`]) {
        const alias = await portico.call('GET', path, { token });
        expect(alias.status, path).toBe(404);
        expect(alias.body.code).toBe('ERR_ROUTE_NOT_FOUND');
      }
    }
  });

  it('a payment invalidates the invoice list that was cached under the literal spelling', async () => {
    const id = `cus:${hex()}`;
    const token = await portico.token(id);
    const orderId = await newOrder(token);
    const invoices = `/v1/customers/${id}/invoices`;
    expect((await portico.call('GET', invoices, { token })).body.data).toEqual([]);
    expect((await portico.call('GET', invoices, { token })).headers['cache-status']).toMatch(/^Portico; hit/);
    const paid = await portico.call('POST', '/v1/payments', {
      token,
      body: { order_id: orderId, amount: 2500 },
    });
    expect(paid.status).toBe(201);
    expect((await portico.call('GET', invoices, { token })).body.data).toHaveLength(1);
  });
});

describe('unauthenticated traffic', () => {
  it('is limited by client address, and 250 ?flush=N requests evict no customer entry', async () => {
    const token = await portico.token(`victim_${hex()}`, { scopes: CUSTOMER });
    const id = await newOrder(token);
    const path = `/v1/orders/${id}`;
    await portico.call('GET', path, { token });
    expect((await portico.call('GET', path, { token })).headers['cache-status']).toMatch(/^Portico; hit/);

    const statuses: number[] = [];
    for (let n = 0; n < 250; n++)
      statuses.push((await portico.call('GET', `/v1/openapi.json?flush=${n}`)).status);
    expect(statuses.filter((s) => s !== 429).length).toBeLessThanOrEqual(100);
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.filter((s) => s === 200)).toEqual([]);

    expect((await portico.call('GET', path, { token })).headers['cache-status']).toMatch(/^Portico; hit/);
  });
});

describe('unauthenticated traffic under the default policies', () => {
  it('is counted per client address by the default policy', async () => {
    const own = await startPortico({ config: (upstream) => ({ routes: routes(upstream) }) });
    try {
      const first = await own.call('GET', '/v1/openapi.json');
      expect(first.status).toBe(200);
      expect(first.headers['ratelimit-policy']).toBe('"default";q=600;w=60');
      expect(first.headers['ratelimit']).toMatch(/^"default";r=599;t=\d+$/);
      const second = await own.call('GET', '/v1/openapi.json');
      expect(second.headers['ratelimit']).toMatch(/^"default";r=598;t=\d+$/);
    } finally {
      await own.close();
    }
  });
});
