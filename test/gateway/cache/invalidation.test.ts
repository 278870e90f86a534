/**
 * Invalidation (RFC 9111 section 4.4) on one replica and across replicas over real Redis:
 * a customer never reads the order they just changed from a stale entry, through either
 * gateway.
 */
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createRedisClient } from '../../../shared/redis.ts';
import { createClock, startCacheGateway, type CacheGateway, type Clock } from './support/cache-gateway.ts';
import { startOrderOrigin, type OrderOrigin } from './support/order-origin.ts';
import { startOrigin } from './support/origin.ts';

const A = { authorization: 'Test cust-a orders:read,orders:write' };
const B = { authorization: 'Test cust-b orders:read,orders:write' };

let clock: Clock;
let origin: OrderOrigin;
const gateways: CacheGateway[] = [];
const clients: Redis[] = [];

async function gateway(options: { redis?: boolean } = {}): Promise<CacheGateway> {
  let redis: Redis | undefined;
  if (options.redis === true) {
    redis = createRedisClient({ url: inject('redisUrl'), keyPrefix: inject('redisPrefix') });
    clients.push(redis);
  }
  const started = await startCacheGateway({
    upstream: origin.url,
    clock,
    redis,
    channel: `${inject('redisPrefix')}cache-invalidation`,
  });
  gateways.push(started);
  expect(await started.cache.whenReady(5000)).toBe(true);
  return started;
}

beforeEach(async () => {
  clock = createClock();
  origin = await startOrderOrigin(clock, [
    { id: 'a1', customer: 'cust-a', status: 'pending', version: 1 },
    { id: 'a2', customer: 'cust-a', status: 'pending', version: 1 },
    { id: 'b1', customer: 'cust-b', status: 'pending', version: 1 },
  ]);
});

afterEach(async () => {
  for (const g of gateways.splice(0)) await g.close();
  for (const client of clients.splice(0)) client.disconnect();
  await origin.close();
});

describe('on one replica', () => {
  it('drops the order and the lists after a successful PATCH, so the customer reads their change', async () => {
    const g = await gateway();
    await g.get('/v1/orders/a1', A);
    await g.get('/v1/orders', A);
    await g.get('/v1/orders?status=pending', A);
    await g.get('/v1/orders', B);
    const patch = await g.send('PATCH', '/v1/orders/a1', A, '{"status":"cancelled"}');
    expect(patch.status).toBe(200);
    expect(patch.headers['portico-invalidates']).toBeUndefined();
    const order = await g.get('/v1/orders/a1', A);
    expect(JSON.parse(order.body).status).toBe('cancelled');
    expect(order.headers['cache-status']).toContain('fwd=uri-miss');
    // Portico-Invalidates: </v1/orders> drops every list, any query, any customer.
    for (const [path, who] of [
      ['/v1/orders', A],
      ['/v1/orders?status=pending', A],
      ['/v1/orders', B],
    ] as const)
      expect((await g.get(path, who)).headers['cache-status']).toContain('fwd=uri-miss');
  });

  it('keeps stored responses after a failed write', async () => {
    const g = await gateway();
    await g.get('/v1/orders/a1', A);
    expect((await g.send('PATCH', '/v1/orders/a1', A, '{}')).status).toBe(200);
    await g.get('/v1/orders/a1', A);
    expect((await g.send('PATCH', '/v1/orders/a1', A, '{}')).status).toBe(409);
    expect((await g.get('/v1/orders/a1', A)).headers['cache-status']).toMatch(/^Portico; hit/);
  });

  it('does not store a read that was in flight while the resource changed', async () => {
    const g = await gateway();
    let release!: () => void;
    origin.gate = new Promise<void>((resolve) => (release = resolve));
    // The read reaches the origin, which answers with the current state but holds it back.
    const read = g.get('/v1/orders/a1', A);
    await until(() => origin.count('/v1/orders/a1') === 1);
    origin.gate = undefined;
    expect((await g.send('PATCH', '/v1/orders/a1', A, '{}')).status).toBe(200);
    release();
    // Concurrent with the write, the read may see the old state...
    expect(JSON.parse((await read).body).status).toBe('pending');
    // ...but it was not stored: the next read sees the change.
    const after = await g.get('/v1/orders/a1', A);
    expect(JSON.parse(after.body).status).toBe('cancelled');
    expect(after.headers['cache-status']).toContain('fwd=uri-miss');
  });

  it('invalidates Location and Content-Location on this origin only', async () => {
    const other = await startOrigin((request) => {
      if (request.method === 'POST')
        return {
          status: 201,
          headers: {
            location: '/v1/items/1',
            'content-location': 'https://elsewhere.example/v1/items/2',
            'cache-control': 'no-store',
          },
        };
      return { headers: { date: clock.date(), 'cache-control': 'max-age=60' }, body: request.path };
    });
    try {
      const g = await startCacheGateway({ upstream: other.url, clock });
      gateways.push(g);
      await g.get('/v1/items/1');
      await g.get('/v1/items/2');
      expect((await g.send('POST', '/v1/items', {}, '{}')).status).toBe(201);
      expect((await g.get('/v1/items/1')).headers['cache-status']).toContain('fwd=uri-miss');
      expect((await g.get('/v1/items/2')).headers['cache-status']).toMatch(/^Portico; hit/);
      // Unknown methods are unsafe (4.4) and invalidate too.
      await g.send('PURGE', '/v1/items/2');
      expect((await g.get('/v1/items/2')).headers['cache-status']).toContain('fwd=uri-miss');
    } finally {
      await other.close();
    }
  });
});

describe('across replicas (Redis)', () => {
  it('a PATCH through one replica is seen through the other at once', async () => {
    const one = await gateway({ redis: true });
    const two = await gateway({ redis: true });
    await one.get('/v1/orders/a1', A);
    await two.get('/v1/orders/a1', A);
    expect((await two.get('/v1/orders/a1', A)).headers['cache-status']).toMatch(/^Portico; hit/);
    expect((await one.send('PATCH', '/v1/orders/a1', A, '{}')).status).toBe(200);
    // The write's response left replica one only after Redis had delivered the invalidation.
    const read = await two.get('/v1/orders/a1', A);
    expect(JSON.parse(read.body).status).toBe('cancelled');
    expect(read.headers['cache-status']).toContain('fwd=uri-miss');
    expect(two.cache.stats().invalidated).toBeGreaterThanOrEqual(1);
  });

  it('spreads a purge to the other replica', async () => {
    const one = await gateway({ redis: true });
    const two = await gateway({ redis: true });
    await two.get('/v1/orders/a2', A);
    one.cache.purge('/v1/orders');
    await until(() => two.cache.stats().entries === 0);
  });

  it('neither serves nor stores while the bus is down, and starts empty when it is back', async () => {
    const one = await gateway({ redis: true });
    await one.get('/v1/orders/a1', A);
    await one.dropInvalidationSubscriber();
    await until(() => !one.cache.available());
    expect((await one.get('/v1/orders/a1', A)).headers['cache-status']).toContain(
      'fwd=bypass; detail=invalidation-offline',
    );
    expect(await one.cache.whenReady(5000)).toBe(true);
    // On a loaded machine the cache can stop being available before the kill is seen: the bus's
    // proof of being caught up goes stale in an event-loop stall of over a second. Then
    // whenReady still sees the old subscription, and the emptying comes with the new one.
    await until(() => one.cache.available() && one.cache.stats().entries === 0);
    expect(one.cache.stats().entries).toBe(0);
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}
