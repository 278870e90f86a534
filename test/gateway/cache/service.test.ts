/**
 * The cache in front of the real resource service (PostgreSQL, assertions, targeted cache
 * control, Portico-Invalidates), two gateway replicas sharing real Redis: what a customer
 * reads right after their own write is never stale, and no customer ever reads another's.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createRedisClient } from '../../../shared/redis.ts';
import {
  ALL_CUSTOMER_SCOPES,
  SAMPLE_ORDER,
  startTestService,
  type TestService,
} from '../../support/service.ts';
import { startCacheGateway, type CacheGateway } from './support/cache-gateway.ts';

let service: TestService;
let one: CacheGateway;
let two: CacheGateway;
const clients: Redis[] = [];

const customer = () => `cus_${randomBytes(6).toString('hex')}`;
const as = (id: string, scopes = ALL_CUSTOMER_SCOPES) => ({
  authorization: `Test ${id} ${scopes.join(',')}`,
});
const json = { 'content-type': 'application/json' };

beforeAll(async () => {
  service = await startTestService();
  const replica = async () => {
    const redis = createRedisClient({ url: inject('redisUrl'), keyPrefix: inject('redisPrefix') });
    clients.push(redis);
    const gateway = await startCacheGateway({
      upstream: service.url,
      route: { auth: 'required' },
      assertionKeys: service.keys,
      redis,
      channel: `${inject('redisPrefix')}service-cache`,
    });
    expect(await gateway.cache.whenReady(5000)).toBe(true);
    return gateway;
  };
  one = await replica();
  two = await replica();
});

afterAll(async () => {
  await one?.close();
  await two?.close();
  for (const client of clients) client.disconnect();
  await service?.close();
});

async function createOrder(gateway: CacheGateway, who: string): Promise<{ id: string; etag: string }> {
  const created = await gateway.send(
    'POST',
    '/v1/orders',
    { ...as(who), ...json, 'idempotency-key': randomBytes(8).toString('hex') },
    JSON.stringify(SAMPLE_ORDER),
  );
  expect(created.status).toBe(201);
  return { id: JSON.parse(created.body).id, etag: created.headers['etag']! };
}

describe('in front of the resource service', () => {
  it('serves an order from the cache per customer, answers If-None-Match at the edge, strips targeted headers', async () => {
    const a = customer();
    const { id } = await createOrder(one, a);
    const first = await one.get(`/v1/orders/${id}`, as(a));
    expect(first.status).toBe(200);
    expect(first.headers['cache-status']).toContain('stored');
    expect(first.headers['portico-cache-control']).toBeUndefined();
    const hit = await one.get(`/v1/orders/${id}`, as(a));
    expect(hit.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(hit.body).toBe(first.body);
    const notModified = await one.get(`/v1/orders/${id}`, {
      ...as(a),
      'if-none-match': first.headers['etag']!,
    });
    expect(notModified.status).toBe(304);
    expect(notModified.headers['cache-status']).toMatch(/^Portico; hit/);
  });

  it("never gives customer B customer A's order, and a caller without the scope still gets 403", async () => {
    const a = customer();
    const b = customer();
    const { id } = await createOrder(one, a);
    const stored = await one.get(`/v1/orders/${id}`, as(a));
    for (const headers of [
      as(b),
      { ...as(b), 'if-none-match': stored.headers['etag']! },
      { ...as(b), 'cache-control': 'max-stale=600' },
    ]) {
      const response = await one.get(`/v1/orders/${id}`, headers);
      expect(response.status).toBe(404);
      expect(response.body).not.toContain(a);
    }
    const scopeless = await one.get(`/v1/orders/${id}`, as(a, ['payments:write']));
    expect(scopeless.status).toBe(403);
  });

  it('shows a customer their own PATCH at once, through the same replica and through the other', async () => {
    const a = customer();
    const { id } = await createOrder(one, a);
    const path = `/v1/orders/${id}`;
    // Both replicas hold the pending order, and the list.
    for (const gateway of [one, two]) {
      await gateway.get(path, as(a));
      await gateway.get('/v1/orders', as(a));
      expect((await gateway.get(path, as(a))).headers['cache-status']).toMatch(/^Portico; hit/);
    }
    const patched = await one.send(
      'PATCH',
      path,
      { ...as(a), 'content-type': 'application/merge-patch+json' },
      '{"status":"cancelled"}',
    );
    expect(patched.status).toBe(200);
    expect(patched.headers['portico-invalidates']).toBeUndefined();
    for (const gateway of [one, two]) {
      const order = await gateway.get(path, as(a));
      expect(JSON.parse(order.body).status).toBe('cancelled');
      const list = await gateway.get('/v1/orders', as(a));
      expect(JSON.parse(list.body).data.find((o: { id: string }) => o.id === id).status).toBe('cancelled');
    }
  });

  it('after a payment through one replica, the other shows the paid order and the new invoice', async () => {
    const a = customer();
    const { id } = await createOrder(one, a);
    const invoices = `/v1/customers/${a}/invoices`;
    await two.get(`/v1/orders/${id}`, as(a));
    expect(JSON.parse((await two.get(invoices, as(a))).body).data).toEqual([]);
    expect((await two.get(invoices, as(a))).headers['cache-status']).toMatch(/^Portico; hit/);
    const paid = await one.send(
      'POST',
      '/v1/payments',
      { ...as(a), ...json, 'idempotency-key': randomBytes(8).toString('hex') },
      JSON.stringify({ order_id: id, amount: 2500 }),
    );
    expect(paid.status).toBe(201);
    expect(JSON.parse((await two.get(`/v1/orders/${id}`, as(a))).body).status).toBe('paid');
    expect(JSON.parse((await two.get(invoices, as(a))).body).data).toHaveLength(1);
  });

  it('keeps the service in charge of If-Match: a stale ETag still gets 412 behind the cache', async () => {
    const a = customer();
    const { id, etag } = await createOrder(one, a);
    await one.get(`/v1/orders/${id}`, as(a));
    const first = await one.send(
      'PATCH',
      `/v1/orders/${id}`,
      { ...as(a), 'content-type': 'application/merge-patch+json', 'if-match': etag },
      '{"status":"cancelled"}',
    );
    expect(first.status).toBe(200);
    const stale = await one.send(
      'PATCH',
      `/v1/orders/${id}`,
      { ...as(a), 'content-type': 'application/merge-patch+json', 'if-match': etag },
      '{"status":"cancelled"}',
    );
    expect(stale.status).toBe(412);
  });
});
