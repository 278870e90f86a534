import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_ORDER, startTestService } from '../support/service.ts';
import type { Client, TestService } from '../support/service.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service.close();
});

async function newOrder(client: Client) {
  return (await client.request('POST', '/v1/orders', { body: SAMPLE_ORDER })).body as {
    id: string;
    total: number;
  };
}

describe('payments', () => {
  it('paying moves the order to paid and issues its invoice, listed under the customer', async () => {
    const alice = service.newCustomer();
    const order = await newOrder(alice);
    const paid = await alice.request('POST', '/v1/payments', { body: { order_id: order.id, amount: 2500 } });
    expect(paid.status).toBe(201);
    expect(paid.headers.get('location')).toBe(`/v1/payments/${paid.body.id}`);
    expect(paid.body).toMatchObject({ order_id: order.id, amount: 2500, currency: 'EUR' });
    // Tells the gateway's cache what else the payment changed.
    expect(paid.headers.get('portico-invalidates')).toBe(
      `</v1/orders/${order.id}>, </v1/orders>, </v1/customers/${alice.principal.customerId}/invoices>`,
    );

    expect((await alice.request('GET', `/v1/orders/${order.id}`)).body.status).toBe('paid');
    const read = await alice.request('GET', `/v1/payments/${paid.body.id}`);
    expect(read.body).toEqual(paid.body);
    const etag = read.headers.get('etag') ?? '';
    expect(
      (await alice.request('GET', `/v1/payments/${paid.body.id}`, { headers: { 'if-none-match': etag } }))
        .status,
    ).toBe(304);
    const invoices = await alice.request('GET', `/v1/customers/${alice.principal.customerId}/invoices`);
    expect(invoices.status).toBe(200);
    expect(invoices.body).toEqual({
      data: [
        {
          id: paid.body.invoice_id,
          customer_id: alice.principal.customerId,
          order_id: order.id,
          amount: 2500,
          currency: 'EUR',
          status: 'paid',
          issued_at: expect.any(String),
        },
      ],
      next_cursor: null,
    });
  });

  it('paying twice is 409 and leaves one payment and one invoice', async () => {
    const alice = service.newCustomer();
    const order = await newOrder(alice);
    expect(
      (await alice.request('POST', '/v1/payments', { body: { order_id: order.id, amount: 2500 } })).status,
    ).toBe(201);
    const again = await alice.request('POST', '/v1/payments', { body: { order_id: order.id, amount: 2500 } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ERR_ALREADY_PAID');
    const [counts] = await service.sql<{ payments: number; invoices: number }[]>`
      select (select count(*)::int from payments where order_id = ${order.id}) as payments,
             (select count(*)::int from invoices where order_id = ${order.id}) as invoices`;
    expect(counts).toEqual({ payments: 1, invoices: 1 });
  });

  it('concurrent payments of one order: exactly one succeeds', async () => {
    const alice = service.newCustomer();
    const order = await newOrder(alice);
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        alice.request('POST', '/v1/payments', { body: { order_id: order.id, amount: 2500 } }),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(9);
  });

  it('a wrong amount is 422 and the order stays pending', async () => {
    const alice = service.newCustomer();
    const order = await newOrder(alice);
    const res = await alice.request('POST', '/v1/payments', { body: { order_id: order.id, amount: 2499 } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('ERR_AMOUNT_MISMATCH');
    expect(res.body.errors[0].pointer).toBe('#/amount');
    expect((await alice.request('GET', `/v1/orders/${order.id}`)).body.status).toBe('pending');
  });

  it('a cancelled order cannot be paid; a missing order is 404; bad bodies are 422', async () => {
    const alice = service.newCustomer();
    const order = await newOrder(alice);
    await alice.request('PATCH', `/v1/orders/${order.id}`, { body: { status: 'cancelled' } });
    const cancelled = await alice.request('POST', '/v1/payments', {
      body: { order_id: order.id, amount: 2500 },
    });
    expect(cancelled.status).toBe(409);
    expect(cancelled.body.code).toBe('ERR_INVALID_TRANSITION');

    const missing = await alice.request('POST', '/v1/payments', {
      body: { order_id: '00000000-0000-4000-8000-000000000000', amount: 1 },
    });
    expect(missing.status).toBe(404);

    for (const body of [
      { order_id: 'nope', amount: 1 },
      { order_id: order.id, amount: 0 },
      { order_id: order.id },
    ]) {
      expect((await alice.request('POST', '/v1/payments', { body })).status).toBe(422);
    }
    const withCurrency = await alice.request('POST', '/v1/payments', {
      body: { order_id: order.id, amount: 2500, currency: 'USD' },
    });
    expect(withCurrency.status).toBe(422);
    expect(withCurrency.body.errors[0]).toMatchObject({
      pointer: '#/currency',
      detail: 'currency is read-only',
    });
  });
});
