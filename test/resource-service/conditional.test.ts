/**
 * Conditional requests at the service, in RFC 9110 §13.2.2's order (issue 35): If-Match is
 * evaluated on every method, reads included, and before If-None-Match; If-Unmodified-Since is
 * not evaluated when If-Match is present (nor at all: orders have no modification date, §13.1.4);
 * `If-None-Match: *` on a write to an order that exists fails (§13.1.2), changing nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_ORDER, startTestService, type Client, type TestService } from '../support/service.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service.close();
});

async function newOrder(): Promise<{ alice: Client; path: string; etag: string }> {
  const alice = service.newCustomer();
  const created = await alice.request('POST', '/v1/orders', { body: SAMPLE_ORDER });
  expect(created.status).toBe(201);
  return { alice, path: `/v1/orders/${created.body.id}`, etag: created.headers.get('etag') ?? '' };
}

describe('If-Match on a read', () => {
  it('not matching: 412 problem with the current ETag', async () => {
    const { alice, path, etag } = await newOrder();
    const res = await alice.request('GET', path, { headers: { 'if-match': '"other"' } });
    expect(res.status).toBe(412);
    expect(res.body.code).toBe('ERR_PRECONDITION_FAILED');
    expect(res.headers.get('etag')).toBe(etag);
  });

  it('matching, or *: 200', async () => {
    const { alice, path, etag } = await newOrder();
    expect((await alice.request('GET', path, { headers: { 'if-match': `"x", ${etag}` } })).status).toBe(200);
    expect((await alice.request('GET', path, { headers: { 'if-match': '*' } })).status).toBe(200);
  });

  it('evaluated before If-None-Match: a failing If-Match is 412, not 304', async () => {
    const { alice, path, etag } = await newOrder();
    const res = await alice.request('GET', path, {
      headers: { 'if-match': '"other"', 'if-none-match': etag },
    });
    expect(res.status).toBe(412);
  });

  it('with If-Unmodified-Since, If-Match wins (RFC 9110 §13.2.2)', async () => {
    const { alice, path, etag } = await newOrder();
    const future = 'Fri, 01 Jan 2100 00:00:00 GMT';
    const past = 'Sat, 01 Jan 2000 00:00:00 GMT';
    const failing = await alice.request('GET', path, {
      headers: { 'if-match': '"other"', 'if-unmodified-since': future },
    });
    expect(failing.status).toBe(412);
    const passing = await alice.request('GET', path, {
      headers: { 'if-match': etag, 'if-unmodified-since': past },
    });
    expect(passing.status).toBe(200);
  });
});

describe('If-None-Match on a write', () => {
  it('* on a PATCH of an existing order: 412, nothing changed', async () => {
    const { alice, path, etag } = await newOrder();
    const res = await alice.request('PATCH', path, {
      body: { items: [{ sku: 'CHANGED', quantity: 1, unit_price: 1 }] },
      headers: { 'if-none-match': '*' },
    });
    expect(res.status).toBe(412);
    expect(res.body.code).toBe('ERR_PRECONDITION_FAILED');
    const after = await alice.request('GET', path);
    expect(after.body.items).toEqual(SAMPLE_ORDER.items);
    expect(after.headers.get('etag')).toBe(etag);
  });

  it('the current ETag (weak comparison) on PUT and DELETE: 412; another tag: served', async () => {
    const { alice, path, etag } = await newOrder();
    const put = await alice.request('PUT', path, {
      body: SAMPLE_ORDER,
      headers: { 'if-none-match': `W/${etag}` },
    });
    expect(put.status).toBe(412);
    const del = await alice.request('DELETE', path, { headers: { 'if-none-match': etag } });
    expect(del.status).toBe(412);
    const other = await alice.request('PATCH', path, {
      body: { items: [{ sku: 'B', quantity: 1, unit_price: 1 }] },
      headers: { 'if-none-match': '"other"' },
    });
    expect(other.status).toBe(200);
  });
});
