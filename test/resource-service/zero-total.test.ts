/**
 * An order whose total is 0 could be created but never paid (a payment's amount is at least 1
 * minor unit), and so never shipped: a dead order, and free line items for anyone who can
 * write. The service refuses a total of 0 wherever items are set: create, replace, patch.
 */
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

const FREE = { items: [{ sku: 'FREE-1', quantity: 3, unit_price: 0 }], currency: 'EUR' };

function expectTotalRefused(reply: { status: number; body: any }) {
  expect(reply.status).toBe(422);
  expect(reply.body.code).toBe('ERR_VALIDATION');
  expect(reply.body.errors).toEqual([expect.objectContaining({ pointer: '#/items' })]);
}

describe('an order total of 0', () => {
  it('is refused on create, replace and patch; free items beside priced ones are fine', async () => {
    const client = service.as({ customerId: 'cus_zero_total' });
    expectTotalRefused(await client.request('POST', '/v1/orders', { body: FREE }));

    const created = await client.request('POST', '/v1/orders', { body: SAMPLE_ORDER });
    expect(created.status).toBe(201);
    const path = `/v1/orders/${created.body.id}`;
    expectTotalRefused(await client.request('PUT', path, { body: FREE }));
    expectTotalRefused(await client.request('PATCH', path, { body: { items: FREE.items } }));

    const mixed = { items: [...SAMPLE_ORDER.items, ...FREE.items], currency: 'EUR' };
    const replaced = await client.request('PUT', path, { body: mixed });
    expect(replaced.status).toBe(200);
    expect(replaced.body.total).toBe(2500);
  });
});
