/**
 * Revalidation answered by a 304 that carries Set-Cookie (RFC 9111 sections 3.1, 3.2 and
 * 4.3.4), over real sockets: the client that caused it gets its cookies with the stored body,
 * never a 502; the cookie is never stored for others unless the response is public.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClock, startCacheGateway, type CacheGateway, type Clock } from './support/cache-gateway.ts';
import { startOrigin, type TestOrigin } from './support/origin.ts';

let origin: TestOrigin;
let gateway: CacheGateway;
let clock: Clock;

afterEach(async () => {
  await gateway.close();
  await origin.close();
});

/** 200 with `first` fields, then 304 with two Set-Cookie lines and `revalidated` fields. */
async function setup(first: Record<string, string>, revalidated: Record<string, string> = {}): Promise<void> {
  clock = createClock();
  origin = await startOrigin((request) =>
    request.headers['if-none-match'] === '"c"'
      ? {
          status: 304,
          headers: {
            date: clock.date(),
            etag: '"c"',
            'set-cookie': ['a=1; Path=/', 'b=2; Path=/'],
            ...revalidated,
          },
        }
      : {
          headers: { date: clock.date(), etag: '"c"', 'content-type': 'text/plain', ...first },
          body: 'stored',
        },
  );
  gateway = await startCacheGateway({ upstream: origin.url, clock });
}

describe('RFC 9111 section 4.3.4: a 304 with Set-Cookie', () => {
  it('answers 200 with the stored body and both cookies, and stores neither cookie for the next client', async () => {
    await setup({ 'cache-control': 'max-age=1' }, { 'cache-control': 'max-age=60', 'x-updated': 'yes' });
    await gateway.get('/v1/things');
    clock.advance(2);
    const revalidated = await gateway.get('/v1/things');
    expect(revalidated.status).toBe(200);
    expect(revalidated.body).toBe('stored');
    expect(revalidated.headers['set-cookie']).toBe('a=1; Path=/, b=2; Path=/');
    expect(revalidated.headers['x-updated']).toBe('yes');
    expect(revalidated.headers['cache-status']).toBe('Portico; fwd=stale; fwd-status=304');
    const next = await gateway.get('/v1/things');
    expect(next.status).toBe(200);
    expect(next.headers['set-cookie']).toBeUndefined();
    expect(origin.requests.filter((r) => r.headers['if-none-match'] !== undefined)).toHaveLength(1);
  });

  it('answers a HEAD revalidated by such a 304 without a body and without a 502', async () => {
    await setup({ 'cache-control': 'max-age=1' });
    await gateway.get('/v1/things');
    clock.advance(2);
    const head = await gateway.send('HEAD', '/v1/things');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers['set-cookie']).toBe('a=1; Path=/, b=2; Path=/');
  });

  it('keeps serving the stale response after a background revalidation brought Set-Cookie, never replaying it', async () => {
    await setup({ 'cache-control': 'max-age=1, stale-while-revalidate=60' });
    await gateway.get('/v1/things');
    clock.advance(2);
    const stale = await gateway.get('/v1/things');
    expect(stale.headers['cache-status']).toContain('detail=stale-while-revalidate');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const after = await gateway.get('/v1/things');
    expect(after.status).toBe(200);
    expect(after.body).toBe('stored');
    expect(after.headers['set-cookie']).toBeUndefined();
  });

  it('stores the 304 cookies with the update when the response is public (3.1), as documented', async () => {
    await setup({ 'cache-control': 'public, max-age=1' }, { 'cache-control': 'public, max-age=60' });
    await gateway.get('/v1/things');
    clock.advance(2);
    await gateway.get('/v1/things');
    const hit = await gateway.get('/v1/things');
    expect(hit.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(hit.headers['set-cookie']).toBe('a=1; Path=/, b=2; Path=/');
  });
});

describe('RFC 9111 section 3.1: responses with Set-Cookie', () => {
  it('are stored only when public', async () => {
    clock = createClock();
    origin = await startOrigin((request) => ({
      headers: {
        date: clock.date(),
        'set-cookie': 's=1',
        'cache-control': request.path.endsWith('public') ? 'public, max-age=60' : 'max-age=60',
      },
      body: 'x',
    }));
    gateway = await startCacheGateway({ upstream: origin.url, clock });
    expect((await gateway.get('/v1/private')).headers['cache-status']).toContain('detail=set-cookie');
    expect((await gateway.get('/v1/public')).headers['cache-status']).toContain('stored');
    expect((await gateway.get('/v1/public')).headers['cache-status']).toMatch(/^Portico; hit/);
  });
});
