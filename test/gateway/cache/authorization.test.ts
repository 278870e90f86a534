/**
 * RFC 9111 section 3.5 and the service's targeted cache control: per-customer entries that
 * only the same customer with the same scopes ever receives, over real sockets.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClock, startCacheGateway, type CacheGateway, type Clock } from './support/cache-gateway.ts';
import { etagOf, startOrderOrigin, type OrderOrigin } from './support/order-origin.ts';
import { startOrigin, type TestOrigin } from './support/origin.ts';

const A = { authorization: 'Test cust-a orders:read,orders:write' };
const B = { authorization: 'Test cust-b orders:read,orders:write' };

let clock: Clock;
let origin: OrderOrigin;
let gateway: CacheGateway;

beforeEach(async () => {
  clock = createClock();
  origin = await startOrderOrigin(clock, [
    { id: 'a1', customer: 'cust-a', status: 'pending', version: 1 },
    { id: 'b1', customer: 'cust-b', status: 'pending', version: 1 },
  ]);
  gateway = await startCacheGateway({ upstream: origin.url, clock, route: { auth: 'required' } });
});

afterEach(async () => {
  await gateway.close();
  await origin.close();
});

describe('per-customer entries', () => {
  it('keeps an order for its customer under the targeted directives, and strips them', async () => {
    const first = await gateway.get('/v1/orders/a1', A);
    expect(first.status).toBe(200);
    expect(first.headers['cache-status']).toBe('Portico; fwd=uri-miss; fwd-status=200; stored');
    const second = await gateway.get('/v1/orders/a1', A);
    expect(second.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(second.headers['cache-control']).toBe('private, no-cache');
    for (const response of [first, second]) expect(response.headers['portico-cache-control']).toBeUndefined();
    expect(origin.count('/v1/orders/a1')).toBe(1);
  });

  it("never gives customer B customer A's stored order, whatever B sends", async () => {
    await gateway.get('/v1/orders/a1', A);
    const etagA = etagOf(origin.orders.get('a1')!);
    const attempts: Record<string, string>[] = [
      B,
      { ...B, 'if-none-match': etagA },
      { ...B, 'cache-control': 'max-stale=3600' },
      { ...B, 'cache-control': 'only-if-cached' },
      { ...B, 'accept-language': 'fr', pragma: 'no-cache' },
      { authorization: 'Test cust-a' },
      {},
      { 'if-none-match': etagA },
      { 'cache-control': 'only-if-cached' },
    ];
    for (const headers of attempts) {
      const response = await gateway.get('/v1/orders/a1', headers);
      expect(response.body).not.toContain('cust-a');
      expect([403, 404, 504]).toContain(response.status);
      expect(response.headers['cache-status'] ?? '').not.toMatch(/hit/);
    }
    // And A still gets its own from the cache.
    expect((await gateway.get('/v1/orders/a1', A)).headers['cache-status']).toMatch(/^Portico; hit/);
  });

  it('does not serve a caller of the same customer without the scope the service requires', async () => {
    await gateway.get('/v1/orders/a1', A);
    const scopeless = await gateway.get('/v1/orders/a1', { authorization: 'Test cust-a' });
    expect(scopeless.status).toBe(403);
    const readOnly = await gateway.get('/v1/orders/a1', { authorization: 'Test cust-a orders:read' });
    expect(readOnly.status).toBe(200);
    expect(readOnly.headers['cache-status']).toContain('fwd=uri-miss');
  });

  it('keeps lists per customer too', async () => {
    const listA = await gateway.get('/v1/orders', A);
    const listB = await gateway.get('/v1/orders', B);
    expect(JSON.parse(listA.body)).toEqual([expect.objectContaining({ id: 'a1' })]);
    expect(JSON.parse(listB.body)).toEqual([expect.objectContaining({ id: 'b1' })]);
    expect(listB.headers['cache-status']).toContain('fwd=uri-miss');
  });

  it('revalidates a stale per-customer entry with its ETag, and answers 304 at the edge', async () => {
    const first = await gateway.get('/v1/orders/a1', A);
    const etag = first.headers['etag']!;
    expect((await gateway.get('/v1/orders/a1', { ...A, 'if-none-match': etag })).status).toBe(304);
    expect(origin.count('/v1/orders/a1')).toBe(1);
    clock.advance(31);
    const revalidated = await gateway.get('/v1/orders/a1', { ...A, 'if-none-match': etag });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers['cache-status']).toBe('Portico; fwd=stale; fwd-status=304');
    expect(origin.requests.at(-1)?.headers['if-none-match']).toBe(etag);
  });

  it('lets If-Match through to the service, which still answers 412 on a stale ETag', async () => {
    await gateway.get('/v1/orders/a1', A);
    const conflict = await gateway.send('PATCH', '/v1/orders/a1', { ...A, 'if-match': '"o-a1.0"' }, '{}');
    expect(conflict.status).toBe(412);
    expect((await gateway.get('/v1/orders/a1', A)).headers['cache-status']).toMatch(/^Portico; hit/);
  });
});

describe('plain Cache-Control on requests with credentials (3.5)', () => {
  let plain: TestOrigin;
  let plainGateway: CacheGateway;
  afterEach(async () => {
    await plainGateway.close();
    await plain.close();
  });

  it('stores nothing for a credentialed request unless the response says public, s-maxage or must-revalidate', async () => {
    plain = await startOrigin((request) => ({
      headers: {
        date: clock.date(),
        'cache-control': request.path.endsWith('public') ? 'public, max-age=60' : 'max-age=60',
      },
      body: `for ${request.customer}`,
    }));
    plainGateway = await startCacheGateway({ upstream: plain.url, clock });
    const privateFirst = await plainGateway.get('/v1/plain', A);
    expect(privateFirst.headers['cache-status']).toContain('detail=authorization');
    const otherCaller = await plainGateway.get('/v1/plain', B);
    expect(otherCaller.body).toBe('for cust-b');
    // An Authorization header the gateway did not verify counts as credentials too.
    const raw = await plainGateway.get('/v1/plain', { authorization: 'Bearer something' });
    expect(raw.headers['cache-status']).toContain('detail=authorization');

    await plainGateway.get('/v1/public', A);
    const shared = await plainGateway.get('/v1/public', B);
    expect(shared.body).toBe('for cust-a');
    expect(shared.headers['cache-status']).toMatch(/^Portico; hit/);
  });
});
