import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
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

const json = Buffer.from(JSON.stringify(SAMPLE_ORDER));

describe('compressed request bodies', () => {
  // RFC 9110 section 15.5.16: an unsupported content coding is a 415 that says, in
  // Accept-Encoding, which codings the resource does accept.
  it.each([
    ['gzip', gzipSync(json)],
    ['br', brotliCompressSync(json)],
    ['deflate', deflateSync(json)],
    ['x-gzip', gzipSync(json)],
    ['GZIP', gzipSync(json)],
    ['gzip, identity', gzipSync(json)],
  ])('Content-Encoding: %s is refused with 415 and Accept-Encoding: identity', async (coding, body) => {
    const alice = service.newCustomer();
    const res = await alice.request('POST', '/v1/orders', {
      rawBody: body,
      headers: { 'content-type': 'application/json', 'content-encoding': coding },
    });
    expect(res.status).toBe(415);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body.code).toBe('ERR_UNSUPPORTED_MEDIA_TYPE');
    expect(res.headers.get('accept-encoding')).toBe('identity');
    expect((await alice.request('GET', '/v1/orders')).body.data).toEqual([]);
  });

  it('applies to every route that reads a body: PATCH and payments too', async () => {
    const alice = service.newCustomer();
    const order = await alice.request('POST', '/v1/orders', { body: SAMPLE_ORDER });
    expect(order.status).toBe(201);
    const patch = await alice.request('PATCH', `/v1/orders/${order.body.id}`, {
      rawBody: gzipSync(JSON.stringify({ status: 'cancelled' })),
      headers: { 'content-type': 'application/merge-patch+json', 'content-encoding': 'gzip' },
    });
    expect(patch.status).toBe(415);
    expect(patch.headers.get('accept-encoding')).toBe('identity');
    const payment = await alice.request('POST', '/v1/payments', {
      rawBody: gzipSync(JSON.stringify({ order_id: order.body.id, amount: 2500 })),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    expect(payment.status).toBe(415);
    expect(payment.body.code).toBe('ERR_UNSUPPORTED_MEDIA_TYPE');
    expect((await alice.request('GET', `/v1/orders/${order.body.id}`)).body.status).toBe('pending');
  });

  it('Content-Encoding: identity is the uncompressed body, accepted as usual', async () => {
    const alice = service.newCustomer();
    const res = await alice.request('POST', '/v1/orders', {
      rawBody: json,
      headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
    });
    expect(res.status).toBe(201);
  });
});
