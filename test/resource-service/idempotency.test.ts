import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_ORDER, startTestService } from '../support/service.ts';
import type { TestService } from '../support/service.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service.close();
});

async function orderCount(customerId: string): Promise<number> {
  const [row] = await service.sql<
    { n: number }[]
  >`select count(*)::int as n from orders where customer_id = ${customerId}`;
  return row?.n ?? -1;
}

describe('Idempotency-Key', () => {
  it('the same key and body replay the first answer, marked as a replay, and create nothing', async () => {
    const alice = service.newCustomer();
    const key = randomUUID();
    const first = await alice.request('POST', '/v1/orders', {
      body: SAMPLE_ORDER,
      headers: { 'idempotency-key': key },
    });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // Same JSON, other key order and spacing: the same request.
    const again = await alice.request('POST', '/v1/orders', {
      rawBody: ' {"currency":"EUR", "items":[{"unit_price":1250,"quantity":2,"sku":"SKU-1"}]}',
      headers: { 'idempotency-key': `"${key}"`, 'content-type': 'application/json' },
    });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(await orderCount(alice.principal.customerId)).toBe(1);
  });

  it('the same key with another body is 422, and with another endpoint too', async () => {
    const alice = service.newCustomer();
    const key = randomUUID();
    await alice.request('POST', '/v1/orders', { body: SAMPLE_ORDER, headers: { 'idempotency-key': key } });
    const other = await alice.request('POST', '/v1/orders', {
      body: { ...SAMPLE_ORDER, currency: 'USD' },
      headers: { 'idempotency-key': key },
    });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('ERR_IDEMPOTENCY_KEY_REUSED');
    const payment = await alice.request('POST', '/v1/payments', {
      body: { order_id: randomUUID(), amount: 1 },
      headers: { 'idempotency-key': key },
    });
    expect(payment.status).toBe(422);
    expect(await orderCount(alice.principal.customerId)).toBe(1);
  });

  it('20 concurrent identical POSTs with one key create exactly one order, every time', async () => {
    for (let round = 0; round < 5; round++) {
      const alice = service.newCustomer();
      const key = randomUUID();
      const results = await Promise.all(
        Array.from({ length: 20 }, () =>
          alice.request('POST', '/v1/orders', { body: SAMPLE_ORDER, headers: { 'idempotency-key': key } }),
        ),
      );
      expect(await orderCount(alice.principal.customerId)).toBe(1);
      const created = results.filter((r) => r.status === 201);
      const inFlight = results.filter((r) => r.status === 409);
      expect(created.length + inFlight.length).toBe(20);
      expect(inFlight.every((r) => r.body.code === 'ERR_IDEMPOTENCY_IN_FLIGHT')).toBe(true);
      expect(new Set(created.map((r) => r.body.id)).size).toBe(1);
      expect(created.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    }
  });

  it('keys are scoped per customer', async () => {
    const alice = service.newCustomer();
    const bob = service.newCustomer();
    const key = randomUUID();
    const a = await alice.request('POST', '/v1/orders', {
      body: SAMPLE_ORDER,
      headers: { 'idempotency-key': key },
    });
    const b = await bob.request('POST', '/v1/orders', {
      body: SAMPLE_ORDER,
      headers: { 'idempotency-key': key },
    });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(b.body.customer_id).toBe(bob.principal.customerId);
  });

  it('a key expires after 24 hours and may then be used again', async () => {
    const alice = service.newCustomer();
    const key = randomUUID();
    await alice.request('POST', '/v1/orders', { body: SAMPLE_ORDER, headers: { 'idempotency-key': key } });
    const [record] = await service.sql<{ hours: number }[]>`
      select round(extract(epoch from expires_at - created_at) / 3600)::int as hours
      from idempotency_records where customer_id = ${alice.principal.customerId}`;
    expect(record?.hours).toBe(24);
    await service.sql`
      update idempotency_records set created_at = now() - interval '25 hours', expires_at = now() - interval '1 hour'
      where customer_id = ${alice.principal.customerId}`;
    const later = await alice.request('POST', '/v1/orders', {
      body: SAMPLE_ORDER,
      headers: { 'idempotency-key': key },
    });
    expect(later.status).toBe(201);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(await orderCount(alice.principal.customerId)).toBe(2);
  });

  it('a refused request stores nothing: fixing the body and retrying with the same key works', async () => {
    const alice = service.newCustomer();
    const key = randomUUID();
    const bad = await alice.request('POST', '/v1/orders', {
      body: { ...SAMPLE_ORDER, currency: 'NOPE' },
      headers: { 'idempotency-key': key },
    });
    expect(bad.status).toBe(422);
    const good = await alice.request('POST', '/v1/orders', {
      body: SAMPLE_ORDER,
      headers: { 'idempotency-key': key },
    });
    expect(good.status).toBe(201);
  });

  it('a payment retried with its key is replayed, not refused as already paid', async () => {
    const alice = service.newCustomer();
    const order = (await alice.request('POST', '/v1/orders', { body: SAMPLE_ORDER })).body;
    const key = randomUUID();
    const body = { order_id: order.id, amount: 2500 };
    const first = await alice.request('POST', '/v1/payments', { body, headers: { 'idempotency-key': key } });
    const retry = await alice.request('POST', '/v1/payments', { body, headers: { 'idempotency-key': key } });
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
  });

  it('a replay after the order changed shows it as it is now; after it was deleted, says so', async () => {
    const alice = service.newCustomer();
    const key = randomUUID();
    const create = () =>
      alice.request('POST', '/v1/orders', { body: SAMPLE_ORDER, headers: { 'idempotency-key': key } });
    const first = await create();
    expect(first.status).toBe(201);
    const path = first.headers.get('location')!;
    const cancelled = await alice.request('PATCH', path, { body: { status: 'cancelled' } });
    expect(cancelled.status).toBe(200);

    // The outcome is replayed (201, the same order), never the stale representation and ETag.
    const afterChange = await create();
    expect(afterChange.status).toBe(201);
    expect(afterChange.headers.get('idempotent-replayed')).toBe('true');
    expect(afterChange.headers.get('location')).toBe(path);
    expect(afterChange.body).toEqual(cancelled.body);
    expect(afterChange.headers.get('etag')).toBe(cancelled.headers.get('etag'));

    expect((await alice.request('DELETE', path)).status).toBe(204);
    const afterDelete = await create();
    expect(afterDelete.status).toBe(404);
    expect(afterDelete.body.code).toBe('ERR_NOT_FOUND');
    expect(afterDelete.headers.get('idempotent-replayed')).toBe('true');
    expect(await orderCount(alice.principal.customerId)).toBe(0);
  });

  it('a malformed key is 400', async () => {
    const alice = service.newCustomer();
    for (const key of ['', 'a b', 'x'.repeat(256)]) {
      const res = await alice.request('POST', '/v1/orders', {
        body: SAMPLE_ORDER,
        headers: { 'idempotency-key': key },
      });
      expect(res.status, JSON.stringify(key)).toBe(400);
      expect(res.body.code).toBe('ERR_INVALID_HEADER');
    }
    expect(await orderCount(alice.principal.customerId)).toBe(0);
  });
});
