/**
 * OWASP API1 (BOLA) from the attacker's side: customer B tries customer A's ids everywhere and
 * gets exactly what a missing id gets, and A's data is unchanged afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_ORDER, startTestService } from '../support/service.ts';
import type { Client, TestService } from '../support/service.ts';

let service: TestService;
let alice: Client;
let bob: Client;
let aliceOrder: { id: string };
let alicePaidOrder: { id: string };
let alicePayment: { id: string };

beforeAll(async () => {
  service = await startTestService();
  alice = service.newCustomer('alice');
  bob = service.newCustomer('bob');
  aliceOrder = (await alice.request('POST', '/v1/orders', { body: SAMPLE_ORDER })).body;
  alicePaidOrder = (await alice.request('POST', '/v1/orders', { body: SAMPLE_ORDER })).body;
  alicePayment = (
    await alice.request('POST', '/v1/payments', { body: { order_id: alicePaidOrder.id, amount: 2500 } })
  ).body;
  await bob.request('POST', '/v1/orders', { body: SAMPLE_ORDER });
});
afterAll(async () => {
  await service.close();
});

const MISSING = '00000000-0000-4000-8000-000000000000';

describe("another customer's ids", () => {
  it('reads of orders, payments, customers and invoices answer like a missing id', async () => {
    const pairs: [string, string][] = [
      [`/v1/orders/${aliceOrder.id}`, `/v1/orders/${MISSING}`],
      [`/v1/payments/${alicePayment.id}`, `/v1/payments/${MISSING}`],
      [`/v1/customers/${alice.principal.customerId}`, '/v1/customers/cus_nobody_here'],
      [`/v1/customers/${alice.principal.customerId}/invoices`, '/v1/customers/cus_nobody_here/invoices'],
    ];
    for (const [foreign, missing] of pairs) {
      const a = await bob.request('GET', foreign);
      const b = await bob.request('GET', missing);
      expect(a.status, foreign).toBe(404);
      expect(b.status, missing).toBe(404);
      const strip = (body: Record<string, unknown>) => ({ ...body, instance: undefined });
      expect(strip(a.body)).toEqual(strip(b.body));
      expect(a.headers.get('etag')).toBeNull();
    }
  });

  it('writes to them answer 404 and change nothing', async () => {
    const path = `/v1/orders/${aliceOrder.id}`;
    const before = await alice.request('GET', path);
    const attempts = [
      await bob.request('PUT', path, { body: { ...SAMPLE_ORDER, currency: 'USD' } }),
      await bob.request('PATCH', path, { body: { status: 'cancelled' } }),
      await bob.request('PATCH', path, { body: { items: [{ sku: 'X', quantity: 9, unit_price: 1 }] } }),
      await bob.request('DELETE', path),
      await bob.request('POST', '/v1/payments', { body: { order_id: aliceOrder.id, amount: 2500 } }),
    ];
    for (const res of attempts) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('ERR_NOT_FOUND');
    }
    const after = await alice.request('GET', path);
    expect(after.body).toEqual(before.body);
    expect(after.headers.get('etag')).toBe(before.headers.get('etag'));
  });

  it("lists never include another customer's rows, and the customer_id filter is for admins", async () => {
    const list = await bob.request('GET', '/v1/orders?limit=100');
    expect(list.body.data.length).toBe(1);
    expect(
      list.body.data.every((o: { customer_id: string }) => o.customer_id === bob.principal.customerId),
    ).toBe(true);
    const filter = await bob.request('GET', `/v1/orders?customer_id=${alice.principal.customerId}`);
    expect(filter.status).toBe(403);
  });

  it('a customer id in the body cannot move an order to another customer (mass assignment)', async () => {
    const res = await bob.request('POST', '/v1/orders', {
      body: { ...SAMPLE_ORDER, customer_id: alice.principal.customerId },
    });
    expect(res.status).toBe(422);
    const aliceList = await alice.request('GET', '/v1/orders?limit=100');
    expect(aliceList.body.data.length).toBe(2);
  });
});

describe('admins', () => {
  it('read across customers and filter by customer', async () => {
    const admin = service.admin();
    expect((await admin.request('GET', `/v1/orders/${aliceOrder.id}`)).status).toBe(200);
    expect((await admin.request('GET', `/v1/customers/${alice.principal.customerId}`)).status).toBe(200);
    const invoices = await admin.request('GET', `/v1/customers/${alice.principal.customerId}/invoices`);
    expect(invoices.body.data).toHaveLength(1);
    const filtered = await admin.request('GET', `/v1/orders?customer_id=${alice.principal.customerId}`);
    expect(filtered.body.data.map((o: { id: string }) => o.id).sort()).toEqual(
      [aliceOrder.id, alicePaidOrder.id].sort(),
    );
  });
});
