/**
 * RFC 9213 targeted cache control over real sockets: `CDN-Cache-Control` beside Portico's own
 * `Portico-Cache-Control`, in the configured order, parsed as a Structured Fields dictionary,
 * and never passed on to the client.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { CacheConfig } from '../../../gateway/config/schema/cache.ts';
import { parseTargeted } from '../../../gateway/cache/rules/directives.ts';
import { createClock, startCacheGateway, type CacheGateway, type Clock } from './support/cache-gateway.ts';
import { startOrigin, type TestOrigin } from './support/origin.ts';

let origin: TestOrigin;
let gateway: CacheGateway;
let clock: Clock;
let open: { gateway: CacheGateway; origin: TestOrigin } | undefined;

/** Closes the gateway and origin of the last setup, once. */
async function teardown(): Promise<void> {
  const last = open;
  open = undefined;
  await last?.gateway.close();
  await last?.origin.close();
}

afterEach(teardown);

/** An origin answering every request with these fields (a function of the clock for dates). */
async function setup(
  headers: (date: number) => Record<string, string | string[]>,
  cache: Partial<CacheConfig> = {},
): Promise<void> {
  clock = createClock();
  origin = await startOrigin(() => ({
    headers: { date: clock.date(), 'content-type': 'text/plain', ...headers(clock.now()) },
    body: `body ${origin.count()}`,
  }));
  gateway = await startCacheGateway({ upstream: origin.url, clock, cache });
  open = { gateway, origin };
}

const httpDate = (ms: number) => new Date(ms).toUTCString();

/** First request stores (or not), then `seconds` pass: was the second answered from the cache? */
async function reusedAfter(seconds: number, path = '/v1/things'): Promise<boolean> {
  await gateway.get(path);
  clock.advance(seconds);
  const second = await gateway.get(path);
  return second.headers['cache-status']?.startsWith('Portico; hit') === true;
}

describe('RFC 9213 section 2.2: a targeted field takes precedence over Cache-Control', () => {
  it('obeys CDN-Cache-Control max-age over a shorter or longer Cache-Control max-age, and strips it', async () => {
    await setup(() => ({ 'cache-control': 'max-age=1', 'cdn-cache-control': 'max-age=3600' }));
    const first = await gateway.get('/v1/things');
    expect(first.headers['cdn-cache-control']).toBeUndefined();
    expect(first.headers['cache-control']).toBe('max-age=1');
    clock.advance(10);
    const hit = await gateway.get('/v1/things');
    expect(hit.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(hit.headers['cdn-cache-control']).toBeUndefined();
    await teardown();

    await setup(() => ({ 'cache-control': 'max-age=3600', 'cdn-cache-control': 'max-age=1' }));
    expect(await reusedAfter(10)).toBe(false);
  });

  it('stores with CDN-Cache-Control max-age even when Cache-Control says no-store', async () => {
    await setup(() => ({ 'cache-control': 'no-store', 'cdn-cache-control': 'max-age=10000' }));
    expect(await reusedAfter(5)).toBe(true);
    expect(origin.count()).toBe(1);
  });

  it('refuses reuse for private, no-cache and no-store in CDN-Cache-Control despite a fresh Cache-Control and Expires', async () => {
    for (const directive of ['private', 'no-cache', 'no-store']) {
      await setup((now) => ({
        'cdn-cache-control': directive,
        'cache-control': 'max-age=10000',
        expires: httpDate(now + 10_000_000),
      }));
      expect(await reusedAfter(1), directive).toBe(false);
      expect(origin.count(), directive).toBe(2);
      await teardown();
    }
  });

  it('reads max-age with Age and ignores Expires: Age past max-age is stale, a past or invalid Expires does not matter', async () => {
    await setup(() => ({ 'cdn-cache-control': 'max-age=3600', age: '7200' }));
    expect(await reusedAfter(0)).toBe(false);
    await teardown();
    for (const expires of [httpDate(Date.UTC(2026, 0, 1)), '0']) {
      await setup(() => ({ 'cdn-cache-control': 'max-age=3600', expires }));
      expect(await reusedAfter(10), expires).toBe(true);
      await teardown();
    }
    await setup((now) => ({ 'cdn-cache-control': 'max-age=0', expires: httpDate(now + 10_000_000) }));
    expect(await reusedAfter(0)).toBe(false);
  });

  it('reads a max-age past 2^31 as 2^31 (RFC 9111 section 1.2.2)', async () => {
    await setup(() => ({ 'cdn-cache-control': 'max-age=99999999999' }));
    expect(await reusedAfter(86400 * 365)).toBe(true);
  });
});

describe('RFC 9213 section 2.2: the configured order of targeted fields, first match wins', () => {
  it('prefers Portico-Cache-Control over CDN-Cache-Control by default, and strips both', async () => {
    await setup(() => ({ 'portico-cache-control': 'max-age=5', 'cdn-cache-control': 'max-age=3600' }));
    const first = await gateway.get('/v1/things');
    expect(first.headers['portico-cache-control']).toBeUndefined();
    expect(first.headers['cdn-cache-control']).toBeUndefined();
    clock.advance(10);
    expect((await gateway.get('/v1/things')).headers['cache-status']).toContain('fwd=stale');
  });

  it('follows a configured order, and passes over a targeted field that does not parse', async () => {
    await setup(() => ({ 'portico-cache-control': 'max-age=5', 'cdn-cache-control': 'max-age=3600' }), {
      targetedFields: ['cdn-cache-control', 'portico-cache-control'],
    });
    expect(await reusedAfter(10)).toBe(true);
    await teardown();
    await setup(() => ({ 'portico-cache-control': 'max-age=5,,', 'cdn-cache-control': 'max-age=3600' }));
    expect(await reusedAfter(10)).toBe(true);
  });

  it('obeys and strips a field of its own naming, and leaves CDN-Cache-Control to the client when not listed', async () => {
    await setup(
      () => ({
        'cache-control': 'no-store',
        'edge-cache-control': 'max-age=60',
        'cdn-cache-control': 'no-store',
      }),
      { targetedFields: ['edge-cache-control'] },
    );
    const first = await gateway.get('/v1/things');
    expect(first.headers['edge-cache-control']).toBeUndefined();
    expect(first.headers['cdn-cache-control']).toBe('no-store');
    clock.advance(10);
    expect((await gateway.get('/v1/things')).headers['cache-status']).toMatch(/^Portico; hit/);
  });
});

describe('RFC 9213 with RFC 9111 section 3.5: targeted fields on requests with credentials', () => {
  it('keeps a CDN-Cache-Control response for the customer and scopes that asked, never for another', async () => {
    clock = createClock();
    origin = await startOrigin((request) => ({
      headers: { date: clock.date(), 'cache-control': 'private', 'cdn-cache-control': 'max-age=60' },
      body: `data of ${request.customer ?? 'nobody'}`,
    }));
    gateway = await startCacheGateway({ upstream: origin.url, clock, route: { auth: 'required' } });
    open = { gateway, origin };
    const a = { authorization: 'Test cust-a orders:read' };
    await gateway.get('/v1/things', a);
    const hit = await gateway.get('/v1/things', a);
    expect(hit.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(hit.body).toBe('data of cust-a');
    const other = await gateway.get('/v1/things', { authorization: 'Test cust-b orders:read' });
    expect(other.body).toBe('data of cust-b');
    const fewerScopes = await gateway.get('/v1/things', { authorization: 'Test cust-a' });
    expect(fewerScopes.headers['cache-status']).toContain('fwd=uri-miss');
    expect(origin.count()).toBe(3);
  });
});

describe('RFC 9213 section 2.1: the field is a Structured Fields dictionary', () => {
  it('ignores a field with a parse error (upper case key, space around "=", a stray token): Cache-Control applies', async () => {
    for (const field of ['MaX-aGe=3600', 'max-age =100', 'max-age= 100', 'max-age=10000, &&&&&']) {
      await setup(() => ({ 'cache-control': 'max-age=1', 'cdn-cache-control': field }));
      expect(await reusedAfter(5), field).toBe(false);
      await teardown();
    }
    await setup(() => ({ 'cache-control': 'max-age=100', 'cdn-cache-control': 'Max-Age=1' }));
    expect(await reusedAfter(5)).toBe(true);
  });

  it('ignores unknown extensions and does not consume a member of the wrong type', async () => {
    await setup(() => ({ 'cdn-cache-control': 'foobar, max-age=3600' }));
    expect(await reusedAfter(60)).toBe(true);
    await teardown();
    // max-age="10000" is a String: not consumed; the field still replaces Cache-Control.
    await setup(() => ({ 'cache-control': 'max-age=10000', 'cdn-cache-control': 'max-age="10000"' }));
    expect(await reusedAfter(5)).toBe(false);
    expect(origin.count()).toBe(2);
  });

  it('keeps the type of each member: integers for delta-seconds, strings for field lists, true for flags', () => {
    expect(parseTargeted('max-age="60"')?.has('max-age')).toBe(false);
    expect(parseTargeted('max-age=1.5, s-maxage=-1')?.size).toBe(0);
    expect(parseTargeted('max-age=?1')?.has('max-age')).toBe(false);
    expect(parseTargeted('no-store=3, public="yes"')?.size).toBe(0);
    expect([...(parseTargeted('private="set-cookie", no-cache, max-age=60;p=1') ?? [])]).toEqual([
      ['private', 'set-cookie'],
      ['no-cache', true],
      ['max-age', '60'],
    ]);
    // A later member overwrites the earlier, also with a value that is then not consumed.
    expect(parseTargeted('max-age=60, max-age="x"')?.has('max-age')).toBe(false);
    expect(parseTargeted('max-age = 60')).toBeUndefined();
  });
});
