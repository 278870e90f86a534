/**
 * The product over HTTP/2: a real token, the resource service on PostgreSQL behind the gateway,
 * every stage on the way (authentication, limits, cache, identity assertion), driven by a
 * node:http2 client, with HTTP/1.1 answers for the same resource as the yardstick.
 */
import type { ClientHttp2Session } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSession, h2Request, h2Session } from '../gateway/support/h2-client.ts';
import { startPortico, type Portico } from './support/portico.ts';

let portico: Portico;
let token: string;
let session: ClientHttp2Session;
beforeAll(async () => {
  portico = await startPortico();
  token = await portico.token('cust-h2');
  session = await h2Session(portico.gateway.addresses.https.port, portico.ca);
});
afterAll(async () => {
  if (session !== undefined) await closeSession(session);
  await portico?.close();
});

const ORDER = { items: [{ sku: 'SKU-1', quantity: 2, unit_price: 1250 }], currency: 'EUR' };

describe('the API over HTTP/2', () => {
  it('creates an order with a body sent without Content-Length, reads it, and revalidates it', async () => {
    const created = await h2Request(
      session,
      {
        ':method': 'POST',
        ':path': '/v1/orders',
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'idempotency-key': 'h2-order-1',
      },
      (stream) => {
        const body = JSON.stringify(ORDER);
        stream.write(body.slice(0, 20));
        setTimeout(() => stream.end(body.slice(20)), 20);
      },
    );
    expect(created.status).toBe(201);
    const order = JSON.parse(created.body) as { id: string; total: number; customer_id: string };
    expect(order).toMatchObject({ total: 2500, customer_id: 'cust-h2' });

    const read = await h2Request(session, {
      ':path': `/v1/orders/${order.id}`,
      authorization: `Bearer ${token}`,
    });
    expect(read.status).toBe(200);
    expect(JSON.parse(read.body)).toMatchObject({ id: order.id });
    const etag = String(read.headers['etag']);
    expect(etag).not.toBe('undefined');

    const again = await h2Request(session, {
      ':path': `/v1/orders/${order.id}`,
      authorization: `Bearer ${token}`,
      'if-none-match': etag,
    });
    expect(again.status).toBe(304);

    // The same resource over HTTP/1.1: the same answer.
    const overHttp1 = await portico.call('GET', `/v1/orders/${order.id}`, { token });
    expect(overHttp1.status).toBe(200);
    expect(overHttp1.body).toEqual(JSON.parse(read.body));
  });

  it('refuses a missing credential with the same 401 problem and WWW-Authenticate', async () => {
    const response = await h2Request(session, { ':path': '/v1/orders' });
    expect(response.status).toBe(401);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(response.headers['strict-transport-security']).toBeDefined();
  });

  it('a second read of an order is a cache hit over HTTP/2, for its customer only', async () => {
    const created = await portico.call('POST', '/v1/orders', {
      token,
      body: ORDER,
      headers: { 'idempotency-key': 'h2-order-2' },
    });
    expect(created.status).toBe(201);
    const path = `/v1/orders/${(created.body as { id: string }).id}`;
    const first = await h2Request(session, { ':path': path, authorization: `Bearer ${token}` });
    const second = await h2Request(session, { ':path': path, authorization: `Bearer ${token}` });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(String(second.headers['cache-status'])).toMatch(/; hit/);
    expect(second.body).toBe(first.body);
    const other = await portico.token('cust-h2-other');
    const stranger = await h2Request(session, { ':path': path, authorization: `Bearer ${other}` });
    expect(stranger.status).toBe(404);
  });
});
