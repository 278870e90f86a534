/**
 * RFC 9111 section 4.3.5: a 200 to a HEAD request the cache sent upstream updates the stored
 * GET response's header fields and freshness, or drops it when the validators (or the length)
 * disagree. Over real sockets, with a manual clock.
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

const BODY = 'stored body';

/** GETs get the stored body with max-age=10; HEADs get a 200 (never 304) with `head` fields. */
async function setup(head: Record<string, string>): Promise<void> {
  clock = createClock();
  origin = await startOrigin((request) =>
    request.method === 'HEAD'
      ? { headers: { date: clock.date(), 'content-length': String(BODY.length), ...head } }
      : {
          headers: {
            date: clock.date(),
            etag: '"v1"',
            'last-modified': 'Sat, 21 Nov 2026 12:00:00 GMT',
            'cache-control': 'max-age=10',
            'x-version': 'one',
          },
          body: BODY,
        },
  );
  gateway = await startCacheGateway({ upstream: origin.url, clock });
  await gateway.get('/v1/things');
  clock.advance(11);
}

describe('RFC 9111 section 4.3.5: freshening stored responses with HEAD', () => {
  it('updates the stored GET response from a HEAD 200 whose validators match', async () => {
    await setup({ etag: '"v1"', 'cache-control': 'max-age=100', 'x-version': 'two' });
    const head = await gateway.send('HEAD', '/v1/things');
    expect(head.status).toBe(200);
    expect(head.headers['x-version']).toBe('two');
    expect(origin.requests[1]?.method).toBe('HEAD');
    clock.advance(50);
    const get = await gateway.get('/v1/things');
    expect(get.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(get.body).toBe(BODY);
    expect(get.headers['x-version']).toBe('two');
    expect(get.headers['cache-control']).toBe('max-age=100');
    expect(get.headers['age']).toBe('50');
    expect(origin.count()).toBe(2);
  });

  it('drops the stored response when the HEAD response carries another ETag', async () => {
    await setup({ etag: '"v2"', 'cache-control': 'max-age=100' });
    await gateway.send('HEAD', '/v1/things');
    const get = await gateway.get('/v1/things');
    expect(get.headers['cache-status']).toContain('fwd=uri-miss');
    expect(origin.count()).toBe(3);
  });

  it('drops it when the Content-Length differs, or when the HEAD response has no validator', async () => {
    await setup({ etag: '"v1"', 'cache-control': 'max-age=100', 'content-length': '999' });
    await gateway.send('HEAD', '/v1/things');
    expect((await gateway.get('/v1/things')).headers['cache-status']).toContain('fwd=uri-miss');
    await gateway.close();
    await origin.close();

    await setup({ 'cache-control': 'max-age=100' });
    await gateway.send('HEAD', '/v1/things');
    expect((await gateway.get('/v1/things')).headers['cache-status']).toContain('fwd=uri-miss');
  });

  it('matches on Last-Modified when that is the validator the HEAD response carries', async () => {
    await setup({ 'last-modified': 'Sat, 21 Nov 2026 12:00:00 GMT', 'cache-control': 'max-age=100' });
    await gateway.send('HEAD', '/v1/things');
    clock.advance(20);
    expect((await gateway.get('/v1/things')).headers['cache-status']).toMatch(/^Portico; hit/);
  });
});
