import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_ORDER, startTestService } from '../support/service.ts';
import type { Client, TestService } from '../support/service.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ maxBodyBytes: 4096 });
});
afterAll(async () => {
  await service.close();
});

async function createOrder(client: Client, body: unknown = SAMPLE_ORDER) {
  const res = await client.request('POST', '/v1/orders', { body });
  expect(res.status).toBe(201);
  return res;
}

describe('creating and reading orders', () => {
  it('accepts the documented body and answers 201 with Location, ETag and the computed total', async () => {
    const alice = service.newCustomer();
    const res = await createOrder(alice);
    expect(res.headers.get('location')).toBe(`/v1/orders/${res.body.id}`);
    expect(res.headers.get('etag')).toMatch(/^"[^"]+"$/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({
      customer_id: alice.principal.customerId,
      status: 'pending',
      items: SAMPLE_ORDER.items,
      currency: 'EUR',
      total: 2500,
    });

    const read = await alice.request('GET', res.headers.get('location') ?? '');
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
    expect(read.headers.get('etag')).toBe(res.headers.get('etag'));
    expect(read.headers.get('cache-control')).toBe('private, no-cache');
    // RFC 9213 targeted cache control: only the gateway may keep it, per customer.
    expect(read.headers.get('portico-cache-control')).toBe('max-age=30');
    expect(res.headers.get('portico-invalidates')).toBe('</v1/orders>');
  });

  it('answers 304 to a matching If-None-Match, and 200 once the order changed', async () => {
    const alice = service.newCustomer();
    const { body, headers } = await createOrder(alice);
    const etag = headers.get('etag') ?? '';
    const path = `/v1/orders/${body.id}`;
    const notModified = await alice.request('GET', path, {
      headers: { 'if-none-match': `"other", ${etag}` },
    });
    expect(notModified.status).toBe(304);
    expect(notModified.text).toBe('');
    expect(notModified.headers.get('etag')).toBe(etag);
    // Weak comparison for If-None-Match: W/ of the same tag matches too.
    expect((await alice.request('GET', path, { headers: { 'if-none-match': `W/${etag}` } })).status).toBe(
      304,
    );

    await alice.request('PATCH', path, { body: { items: [{ sku: 'SKU-2', quantity: 1, unit_price: 5 }] } });
    const changed = await alice.request('GET', path, { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
  });

  it('answers 404 for a missing order and for an id that cannot exist, with the same body shape', async () => {
    const alice = service.newCustomer();
    const missing = await alice.request('GET', '/v1/orders/00000000-0000-4000-8000-000000000000');
    const malformed = await alice.request('GET', '/v1/orders/not-a-uuid');
    for (const res of [missing, malformed]) {
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(res.body.code).toBe('ERR_NOT_FOUND');
    }
    expect(Object.keys(missing.body).sort()).toEqual(Object.keys(malformed.body).sort());
    expect(missing.body.detail).toBe(malformed.body.detail);
  });
});

describe('input validation', () => {
  it('refuses unknown and read-only fields, naming each by JSON pointer, and stores nothing', async () => {
    const alice = service.newCustomer();
    const res = await alice.request('POST', '/v1/orders', {
      body: { ...SAMPLE_ORDER, id: 'x', customer_id: 'someone-else', status: 'paid', total: 1, discount: 50 },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('ERR_VALIDATION');
    const byPointer = Object.fromEntries(
      (res.body.errors as { pointer: string; detail: string }[]).map((e) => [e.pointer, e.detail]),
    );
    expect(byPointer['#/id']).toMatch(/read-only/);
    expect(byPointer['#/customer_id']).toMatch(/read-only/);
    expect(byPointer['#/status']).toMatch(/read-only/);
    expect(byPointer['#/total']).toMatch(/read-only/);
    expect(byPointer['#/discount']).toMatch(/not a field/);
    const list = await alice.request('GET', '/v1/orders');
    expect(list.body.data).toEqual([]);
  });

  it('reports every bad item field at once', async () => {
    const alice = service.newCustomer();
    const res = await alice.request('POST', '/v1/orders', {
      body: {
        items: [
          { sku: '', quantity: 0, unit_price: -1 },
          { sku: 'OK', quantity: 1.5, unit_price: '3' },
        ],
        currency: 'XXQ',
      },
    });
    expect(res.status).toBe(422);
    const pointers = (res.body.errors as { pointer: string }[]).map((e) => e.pointer).sort();
    expect(pointers).toEqual(
      [
        '#/currency',
        '#/items/0/quantity',
        '#/items/0/sku',
        '#/items/0/unit_price',
        '#/items/1/quantity',
        '#/items/1/unit_price',
      ].sort(),
    );
  });

  it('refuses missing fields, empty item lists and non-object bodies', async () => {
    const alice = service.newCustomer();
    for (const body of [{}, { items: [], currency: 'EUR' }, [], 'order', null, 42]) {
      const res = await alice.request('POST', '/v1/orders', { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.code).toBe('ERR_VALIDATION');
    }
  });

  it('answers malformed JSON 400, wrong media type 415, and an oversized body 413', async () => {
    const alice = service.newCustomer();
    const malformed = await alice.request('POST', '/v1/orders', {
      rawBody: '{"items": [',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('ERR_MALFORMED_JSON');

    const empty = await alice.request('POST', '/v1/orders', {
      rawBody: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(empty.status).toBe(400);

    const form = await alice.request('POST', '/v1/orders', {
      rawBody: 'items=1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    expect(form.body.code).toBe('ERR_UNSUPPORTED_MEDIA_TYPE');
    expect(form.headers.get('accept-post')).toBe('application/json');

    const huge = { ...SAMPLE_ORDER, padding: 'x'.repeat(10_000) };
    const tooLarge = await alice.request('POST', '/v1/orders', { body: huge });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.code).toBe('ERR_PAYLOAD_TOO_LARGE');
    expect((await alice.request('GET', '/v1/orders')).body.data).toEqual([]);
  });

  it('ignores __proto__ tricks: such a key is just an unknown field', async () => {
    const alice = service.newCustomer();
    const res = await alice.request('POST', '/v1/orders', {
      rawBody:
        '{"items":[{"sku":"A","quantity":1,"unit_price":1}],"currency":"EUR","__proto__":{"status":"paid"}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].pointer).toBe('#/__proto__');
  });
});

describe('changing orders', () => {
  it('PUT replaces items and currency of a pending order, and refuses client-owned fields', async () => {
    const alice = service.newCustomer();
    const { body: order } = await createOrder(alice);
    const path = `/v1/orders/${order.id}`;
    const replaced = await alice.request('PUT', path, {
      body: { items: [{ sku: 'SKU-9', quantity: 3, unit_price: 100 }], currency: 'USD' },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ currency: 'USD', total: 300, status: 'pending', id: order.id });

    const withStatus = await alice.request('PUT', path, { body: { ...SAMPLE_ORDER, status: 'cancelled' } });
    expect(withStatus.status).toBe(422);
    expect(withStatus.body.errors[0]).toMatchObject({ pointer: '#/status' });
    expect((await alice.request('GET', path)).body.status).toBe('pending');
  });

  it('If-Match: a stale ETag gets 412 on PUT, PATCH and DELETE and changes nothing; the current one works', async () => {
    const alice = service.newCustomer();
    const created = await createOrder(alice);
    const path = `/v1/orders/${created.body.id}`;
    const stale = created.headers.get('etag') ?? '';
    const updated = await alice.request('PATCH', path, {
      body: { items: [{ sku: 'B', quantity: 1, unit_price: 1 }] },
      headers: { 'if-match': stale },
    });
    expect(updated.status).toBe(200);
    const current = updated.headers.get('etag') ?? '';

    for (const [method, body] of [
      ['PUT', SAMPLE_ORDER],
      ['PATCH', { status: 'cancelled' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await alice.request(method, path, { body, headers: { 'if-match': stale } });
      expect(res.status, method).toBe(412);
      expect(res.body.code).toBe('ERR_PRECONDITION_FAILED');
    }
    // A weak tag never matches If-Match (strong comparison).
    expect((await alice.request('DELETE', path, { headers: { 'if-match': `W/${current}` } })).status).toBe(
      412,
    );
    const after = await alice.request('GET', path);
    expect(after.body.items).toEqual([{ sku: 'B', quantity: 1, unit_price: 1 }]);
    expect(after.headers.get('etag')).toBe(current);

    expect((await alice.request('DELETE', path, { headers: { 'if-match': current } })).status).toBe(204);
    expect((await alice.request('GET', path)).status).toBe(404);
  });

  it('PATCH accepts application/merge-patch+json and refuses other media types', async () => {
    const alice = service.newCustomer();
    const { body: order } = await createOrder(alice);
    const path = `/v1/orders/${order.id}`;
    const merge = await alice.request('PATCH', path, {
      rawBody: JSON.stringify({ status: 'cancelled' }),
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    expect(merge.status).toBe(200);
    expect(merge.body.status).toBe('cancelled');
    const text = await alice.request('PATCH', path, {
      rawBody: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    expect(text.headers.get('accept-patch')).toContain('application/merge-patch+json');
  });

  it('refuses PATCH of read-only fields and null for fields that cannot be removed', async () => {
    const alice = service.newCustomer();
    const { body: order } = await createOrder(alice);
    const path = `/v1/orders/${order.id}`;
    for (const body of [
      { total: 1 },
      { customer_id: 'other' },
      { items: null },
      { status: null },
      {},
      { currency: 'USD' },
    ]) {
      const res = await alice.request('PATCH', path, { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
    expect((await alice.request('GET', path)).body).toEqual(order);
  });
});

describe('the order state machine', () => {
  it('customers cancel pending orders; cancelled is final', async () => {
    const alice = service.newCustomer();
    const { body: order } = await createOrder(alice);
    const path = `/v1/orders/${order.id}`;
    const cancelled = await alice.request('PATCH', path, { body: { status: 'cancelled' } });
    expect(cancelled.body.status).toBe('cancelled');
    // The same PATCH again is a no-op, not an error: retries are safe.
    const again = await alice.request('PATCH', path, { body: { status: 'cancelled' } });
    expect(again.status).toBe(200);
    expect(again.headers.get('etag')).toBe(cancelled.headers.get('etag'));
    for (const status of ['pending', 'paid']) {
      const res = await alice.request('PATCH', path, { body: { status } });
      expect(res.status, status).toBe(409);
      expect(res.body.code).toBe('ERR_INVALID_TRANSITION');
    }
    const items = await alice.request('PATCH', path, { body: { items: SAMPLE_ORDER.items } });
    expect(items.status).toBe(409);
    expect(items.body.code).toBe('ERR_ORDER_NOT_PENDING');
  });

  it('shipping transitions need the admin scope, and follow paid → shipped → delivered', async () => {
    const alice = service.newCustomer();
    const admin = service.admin();
    const { body: order } = await createOrder(alice);
    const path = `/v1/orders/${order.id}`;

    const early = await admin.request('PATCH', path, { body: { status: 'shipped' } });
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ code: 'ERR_INVALID_TRANSITION', from: 'pending', to: 'shipped' });

    expect(
      (await alice.request('POST', '/v1/payments', { body: { order_id: order.id, amount: 2500 } })).status,
    ).toBe(201);

    const selfShip = await alice.request('PATCH', path, { body: { status: 'shipped' } });
    expect(selfShip.status).toBe(403);
    expect(selfShip.body.code).toBe('ERR_INSUFFICIENT_SCOPE');
    expect(selfShip.headers.get('www-authenticate')).toContain('insufficient_scope');

    expect((await admin.request('PATCH', path, { body: { status: 'delivered' } })).status).toBe(409);
    expect((await admin.request('PATCH', path, { body: { status: 'shipped' } })).body.status).toBe('shipped');
    expect((await admin.request('PATCH', path, { body: { status: 'cancelled' } })).status).toBe(409);
    expect((await admin.request('PATCH', path, { body: { status: 'delivered' } })).body.status).toBe(
      'delivered',
    );
    const del = await alice.request('DELETE', path);
    expect(del.status).toBe(409);
    expect((await alice.request('GET', path)).body.status).toBe('delivered');
  });
});

describe('methods and routes', () => {
  it('answers 405 with Allow for a method a path does not support, and 404 for unknown paths and versions', async () => {
    const alice = service.newCustomer();
    const res = await alice.request('DELETE', '/v1/orders');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
    expect(res.body.code).toBe('ERR_METHOD_NOT_ALLOWED');
    const withQuery = await alice.request('GET', '/v1/users/me?debug=1');
    expect(withQuery.status).toBe(400);
    expect(withQuery.body.errors[0].parameter).toBe('debug');
    for (const path of ['/v2/orders', '/v1/widgets', '/orders']) {
      const missing = await alice.request('GET', path);
      expect(missing.status, path).toBe(404);
      expect(missing.body.code).toBe('ERR_ROUTE_NOT_FOUND');
    }
  });
});
