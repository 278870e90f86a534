/**
 * The cache as a shared RFC 9111 cache on an `auth: none` route, over real sockets: a
 * scripted origin, the real proxy, and a manual clock so freshness never depends on timing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdminGuard } from '../../../gateway/admin/purge-guard.ts';
import { handlePurge } from '../../../gateway/admin/cache-purge.ts';
import { registerCacheMetrics } from '../../../gateway/cache/metrics.ts';
import { createClock, startCacheGateway, type CacheGateway, type Clock } from './support/cache-gateway.ts';
import { startOrigin, type OriginHandler, type TestOrigin } from './support/origin.ts';

let origin: TestOrigin;
let gateway: CacheGateway;
let clock: Clock;

async function setup(handler: OriginHandler, cache: Parameters<typeof startCacheGateway>[0]['cache'] = {}) {
  clock = createClock();
  origin = await startOrigin(handler);
  gateway = await startCacheGateway({ upstream: origin.url, clock, cache });
}

afterEach(async () => {
  await gateway?.close();
  await origin?.close();
});

/** An origin answering every path with these headers and a body naming the request count. */
function fixed(headers: Record<string, string | string[]>, status = 200): OriginHandler {
  return (request) => ({
    status,
    headers: { date: clock.date(), 'content-type': 'text/plain', ...headers },
    body: `body ${origin.count(request.path)}`,
  });
}

describe('storing and reusing', () => {
  it('answers a fresh stored response without the origin, with Age and Cache-Status', async () => {
    await setup(fixed({ 'cache-control': 'max-age=60', etag: '"a"' }));
    const first = await gateway.get('/v1/things');
    expect(first.body).toBe('body 1');
    expect(first.headers['cache-status']).toBe('Portico; fwd=uri-miss; fwd-status=200; stored');
    clock.advance(10);
    const second = await gateway.get('/v1/things');
    expect(second.body).toBe('body 1');
    expect(second.headers['age']).toBe('10');
    expect(second.headers['cache-status']).toBe('Portico; hit; ttl=50');
    expect(origin.count()).toBe(1);
    expect(gateway.cache.stats()).toMatchObject({ hits: 1, misses: 1, entries: 1 });
    expect(gateway.facts.map((f) => f.cache)).toEqual(['miss', 'hit']);
  });

  it('keys by the whole target: another query string is another response', async () => {
    await setup(fixed({ 'cache-control': 'max-age=60' }));
    await gateway.get('/v1/things?a=1');
    const other = await gateway.get('/v1/things?a=2');
    expect(other.headers['cache-status']).toContain('fwd=uri-miss');
    expect(origin.count()).toBe(2);
  });

  it('answers HEAD from a stored GET, and does not store a HEAD response', async () => {
    await setup(fixed({ 'cache-control': 'max-age=60' }));
    const head = await gateway.send('HEAD', '/v1/things');
    expect(head.headers['cache-status']).toContain('detail=method');
    await gateway.get('/v1/things');
    const second = await gateway.send('HEAD', '/v1/things');
    expect(second.status).toBe(200);
    expect(second.body).toBe('');
    expect(second.headers['content-length']).toBe(String('body 2'.length));
    expect(second.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(origin.count()).toBe(2);
  });

  it('revalidates a stale response with its validator and updates it from the 304', async () => {
    let version = 'one';
    await setup((request) => {
      if (request.headers['if-none-match'] === '"v1"')
        return {
          status: 304,
          headers: { date: clock.date(), etag: '"v1"', 'cache-control': 'max-age=100', 'x-version': version },
        };
      return {
        headers: { date: clock.date(), etag: '"v1"', 'cache-control': 'max-age=10', 'x-version': version },
        body: 'payload',
      };
    });
    await gateway.get('/v1/things');
    clock.advance(11);
    version = 'two';
    const revalidated = await gateway.get('/v1/things');
    expect(origin.requests[1]?.headers['if-none-match']).toBe('"v1"');
    expect(revalidated.status).toBe(200);
    expect(revalidated.body).toBe('payload');
    expect(revalidated.headers['x-version']).toBe('two');
    expect(revalidated.headers['cache-status']).toBe('Portico; fwd=stale; fwd-status=304');
    // The 304's max-age=100 now governs the stored response.
    clock.advance(50);
    const hit = await gateway.get('/v1/things');
    expect(hit.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(hit.headers['x-version']).toBe('two');
    expect(origin.count()).toBe(2);
    expect(gateway.cache.stats().revalidated).toBe(1);
  });

  it('revalidates with If-Modified-Since when Last-Modified is the only validator', async () => {
    const lastModified = 'Sat, 21 Nov 2026 12:00:00 GMT';
    await setup((request) =>
      request.headers['if-modified-since'] === lastModified
        ? { status: 304, headers: { date: clock.date() } }
        : {
            headers: { date: clock.date(), 'last-modified': lastModified, 'cache-control': 'max-age=5' },
            body: 'x',
          },
    );
    await gateway.get('/v1/things');
    clock.advance(6);
    const second = await gateway.get('/v1/things');
    expect(second.body).toBe('x');
    expect(second.headers['cache-status']).toContain('fwd-status=304');
  });
});

describe('conditional requests at the edge', () => {
  it('answers a matching If-None-Match from a fresh entry with 304, without the origin', async () => {
    await setup(fixed({ 'cache-control': 'max-age=60', etag: '"abc"' }));
    await gateway.get('/v1/things');
    const match = await gateway.get('/v1/things', { 'if-none-match': 'W/"x", "abc"' });
    expect(match.status).toBe(304);
    expect(match.body).toBe('');
    expect(match.headers['etag']).toBe('"abc"');
    expect(match.headers['cache-control']).toBe('max-age=60');
    const other = await gateway.get('/v1/things', { 'if-none-match': '"old"' });
    expect(other.status).toBe(200);
    expect(other.body).toBe('body 1');
    expect(origin.count()).toBe(1);
  });

  it('revalidates a stale entry with its own validator, then answers the client conditionally', async () => {
    await setup((request) =>
      request.headers['if-none-match'] === '"abc"'
        ? { status: 304, headers: { date: clock.date(), etag: '"abc"', 'cache-control': 'max-age=60' } }
        : { headers: { date: clock.date(), etag: '"abc"', 'cache-control': 'max-age=60' }, body: 'full' },
    );
    await gateway.get('/v1/things');
    clock.advance(61);
    const response = await gateway.get('/v1/things', { 'if-none-match': '"client-copy", "abc"' });
    expect(origin.requests[1]?.headers['if-none-match']).toBe('"abc"');
    expect(response.status).toBe(304);
  });

  // The suite's conditional-lm-fresh-no-lm wants a 304 here; RFC 9111 4.3.2 says the Date
  // stands for the missing Last-Modified, and that Date is after the client's copy.
  it('conditional-lm-fresh-no-lm: without Last-Modified, compares If-Modified-Since with Date', async () => {
    await setup(fixed({ 'cache-control': 'max-age=10000' }));
    const stored = await gateway.get('/v1/things');
    const date = Date.parse(stored.headers['date'] ?? '');
    const since = (seconds: number) => ({
      'if-modified-since': new Date(date + seconds * 1000).toUTCString(),
    });
    const older = await gateway.get('/v1/things', since(-3000));
    expect(older.status).toBe(200);
    expect(older.body).toBe('body 1');
    expect(older.headers['cache-status']).toMatch(/^Portico; hit/);
    expect((await gateway.get('/v1/things', since(0))).status).toBe(304);
    expect((await gateway.get('/v1/things', since(10))).status).toBe(304);
    expect(origin.count()).toBe(1);
  });

  it('without Last-Modified nor Date, compares If-Modified-Since with the time it was received (4.3.2)', async () => {
    await setup((request) => ({
      headers: { 'cache-control': 'max-age=10000' },
      body: `body ${origin.count(request.path)}`,
      sendDate: false,
    }));
    const receivedAt = clock.now();
    // The client's answer gets a Date from the gateway's HTTP server; the stored one has none.
    await gateway.get('/v1/things');
    clock.advance(5);
    const since = (at: number) => ({ 'if-modified-since': new Date(at).toUTCString() });
    expect((await gateway.get('/v1/things', since(receivedAt))).status).toBe(304);
    expect((await gateway.get('/v1/things', since(receivedAt - 1000))).status).toBe(200);
    expect(origin.count()).toBe(1);
  });

  it('passes If-Match, and Range when nothing fresh is stored, to the origin untouched (4.3.2)', async () => {
    await setup(fixed({ 'cache-control': 'max-age=60', etag: '"abc"' }));
    await gateway.get('/v1/things');
    const ifMatch = await gateway.get('/v1/things', { 'if-match': '"abc"' });
    expect(ifMatch.headers['cache-status']).toContain('fwd=bypass; detail=precondition');
    // A fresh stored response answers ranges itself (ranges.test.ts).
    clock.advance(61);
    const range = await gateway.get('/v1/things', { range: 'bytes=0-1' });
    expect(range.headers['cache-status']).toContain('detail=range');
    expect(origin.count()).toBe(3);
  });
});

describe('what may be stored', () => {
  const cases: [string, Record<string, string>, number, string][] = [
    ['no-store', { 'cache-control': 'no-store, max-age=60' }, 200, 'no-store'],
    ['private', { 'cache-control': 'private, max-age=60' }, 200, 'private'],
    ['PRIVATE (names are case-insensitive)', { 'cache-control': 'PRIVATE, max-age=60' }, 200, 'private'],
    ['429 without explicit freshness', { 'retry-after': '1' }, 429, 'no-freshness'],
    ['500 without explicit freshness', {}, 500, 'no-freshness'],
    ['503 without explicit freshness', {}, 503, 'no-freshness'],
    ['Set-Cookie without public', { 'cache-control': 'max-age=60', 'set-cookie': 'id=1' }, 200, 'set-cookie'],
    ['Vary: *', { 'cache-control': 'max-age=60', vary: '*' }, 200, 'vary-star'],
    ['302 without explicit freshness', { location: '/elsewhere' }, 302, 'no-freshness'],
  ];
  it.each(cases)('does not store %s', async (_name, headers, status, reason) => {
    await setup(fixed(headers, status));
    const first = await gateway.get('/v1/things');
    expect(first.headers['cache-status']).toBe(
      `Portico; fwd=uri-miss; fwd-status=${status}; detail=${reason}`,
    );
    await gateway.get('/v1/things');
    expect(origin.count()).toBe(2);
  });

  it('stores a 500 or 429 that explicitly allows it (max-age)', async () => {
    await setup(fixed({ 'cache-control': 'max-age=30' }, 500));
    await gateway.get('/v1/things');
    const second = await gateway.get('/v1/things');
    expect(second.status).toBe(500);
    expect(second.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(origin.count()).toBe(1);
  });

  it('stores Set-Cookie only when the response is public', async () => {
    await setup(fixed({ 'cache-control': 'public, max-age=60', 'set-cookie': 'theme=dark' }));
    await gateway.get('/v1/things');
    expect((await gateway.get('/v1/things')).headers['cache-status']).toMatch(/^Portico; hit/);
  });

  it('streams a body larger than maxEntryBytes through without storing it', async () => {
    const big = 'x'.repeat(5000);
    await setup(() => ({ headers: { 'cache-control': 'max-age=60', 'content-length': '5000' }, body: big }), {
      maxEntryBytes: 1000,
    });
    const first = await gateway.get('/v1/big');
    expect(first.body).toBe(big);
    expect(first.headers['cache-status']).toContain('detail=too-large');
    expect((await gateway.get('/v1/big')).body).toBe(big);
    expect(origin.count()).toBe(2);
  });

  it('keeps a chunked body over the limit out of the store, and streams it whole', async () => {
    const big = 'y'.repeat(5000);
    await setup(
      () => ({ headers: { 'cache-control': 'max-age=60', 'transfer-encoding': 'chunked' }, body: big }),
      {
        maxEntryBytes: 1000,
      },
    );
    expect((await gateway.get('/v1/big')).body).toBe(big);
    expect((await gateway.get('/v1/big')).body).toBe(big);
    expect(origin.count()).toBe(2);
    expect(gateway.cache.stats().entries).toBe(0);
  });
});

describe('freshness', () => {
  it('prefers s-maxage over max-age, and then never serves stale (5.2.2.10)', async () => {
    await setup(fixed({ 'cache-control': 'max-age=1, s-maxage=30' }));
    await gateway.get('/v1/things');
    clock.advance(20);
    expect((await gateway.get('/v1/things')).headers['cache-status']).toMatch(/^Portico; hit/);
    clock.advance(20);
    const stale = await gateway.get('/v1/things', { 'cache-control': 'max-stale=100' });
    expect(stale.headers['cache-status']).toContain('fwd=stale');
  });

  it('serves must-revalidate while fresh and revalidates it once stale even under max-stale', async () => {
    await setup(fixed({ 'cache-control': 'max-age=10, must-revalidate', etag: '"m"' }));
    await gateway.get('/v1/things');
    expect((await gateway.get('/v1/things')).headers['cache-status']).toMatch(/^Portico; hit/);
    clock.advance(11);
    const stale = await gateway.get('/v1/things', { 'cache-control': 'max-stale' });
    expect(stale.headers['cache-status']).toContain('fwd=stale');
    expect(origin.count()).toBe(2);
  });

  it('serves a stale response to max-stale when nothing forbids it', async () => {
    await setup(fixed({ 'cache-control': 'max-age=10' }));
    await gateway.get('/v1/things');
    clock.advance(15);
    const stale = await gateway.get('/v1/things', { 'cache-control': 'max-stale=10' });
    expect(stale.headers['cache-status']).toBe('Portico; hit; ttl=-5');
  });

  it('revalidates no-cache responses on every use', async () => {
    await setup(fixed({ 'cache-control': 'no-cache', etag: '"n"' }));
    await gateway.get('/v1/things');
    await gateway.get('/v1/things');
    expect(origin.count()).toBe(2);
    expect(origin.requests[1]?.headers['if-none-match']).toBe('"n"');
  });

  it('uses heuristic freshness only without explicit freshness, capped by maxHeuristicSeconds', async () => {
    await setup(
      () => ({
        headers: {
          date: clock.date(),
          'last-modified': new Date(clock.now() - 10 * 86400_000).toUTCString(),
        },
        body: 'h',
      }),
      { maxHeuristicSeconds: 3600 },
    );
    await gateway.get('/v1/things');
    clock.advance(3500);
    expect((await gateway.get('/v1/things')).headers['cache-status']).toMatch(/^Portico; hit/);
    clock.advance(200);
    expect((await gateway.get('/v1/things')).headers['cache-status']).toContain('fwd=stale');
  });

  it('counts the apparent age from Date and an Age from an inner cache (4.2.3)', async () => {
    await setup(() => ({
      headers: {
        date: new Date(clock.now() - 20_000).toUTCString(),
        age: '5',
        'cache-control': 'max-age=30',
      },
      body: 'aged',
    }));
    await gateway.get('/v1/things');
    const hit = await gateway.get('/v1/things');
    expect(hit.headers['age']).toBe('20');
    clock.advance(11);
    expect((await gateway.get('/v1/things')).headers['cache-status']).toContain('fwd=stale');
  });

  it('treats an invalid Expires as already expired (5.3), and invalid max-age as stale', async () => {
    await setup((request) => ({
      headers: request.path.endsWith('expires')
        ? { date: clock.date(), expires: '0' }
        : { date: clock.date(), 'cache-control': 'max-age=60a' },
      body: 'e',
    }));
    await gateway.get('/v1/expires');
    await gateway.get('/v1/expires');
    await gateway.get('/v1/maxage');
    await gateway.get('/v1/maxage');
    expect(origin.count()).toBe(4);
  });

  it('honours the client: no-cache revalidates, only-if-cached without a stored response is 504', async () => {
    await setup(fixed({ 'cache-control': 'max-age=60', etag: '"c"' }));
    const none = await gateway.get('/v1/things', { 'cache-control': 'only-if-cached' });
    expect(none.status).toBe(504);
    expect(none.headers['cache-status']).toBe('Portico; detail=only-if-cached');
    await gateway.get('/v1/things');
    const forced = await gateway.get('/v1/things', { 'cache-control': 'no-cache' });
    expect(forced.headers['cache-status']).toContain('fwd=request');
    expect(origin.requests.at(-1)?.headers['if-none-match']).toBe('"c"');
    const cached = await gateway.get('/v1/things', { 'cache-control': 'only-if-cached' });
    expect(cached.headers['cache-status']).toMatch(/^Portico; hit/);
  });
});

describe('stale-while-revalidate and stale-if-error', () => {
  it('serves stale at once and revalidates in the background', async () => {
    await setup(fixed({ 'cache-control': 'max-age=10, stale-while-revalidate=30', etag: '"s"' }));
    await gateway.get('/v1/things');
    clock.advance(15);
    const stale = await gateway.get('/v1/things');
    expect(stale.body).toBe('body 1');
    expect(stale.headers['cache-status']).toBe('Portico; hit; ttl=-5; detail=stale-while-revalidate');
    await until(() => origin.count() === 2 && gateway.cache.stats().stored === 2);
    expect(origin.requests[1]?.headers['if-none-match']).toBe('"s"');
    const fresh = await gateway.get('/v1/things');
    expect(fresh.body).toBe('body 2');
    expect(fresh.headers['cache-status']).toMatch(/^Portico; hit/);
  });

  it('serves stale when the origin fails within stale-if-error', async () => {
    let failing = false;
    await setup((request) =>
      failing
        ? { status: 503, headers: { 'cache-control': 'no-store' } }
        : {
            headers: { date: clock.date(), 'cache-control': 'max-age=10, stale-if-error=60' },
            body: request.url,
          },
    );
    await gateway.get('/v1/things');
    clock.advance(20);
    failing = true;
    const stale = await gateway.get('/v1/things');
    expect(stale.status).toBe(200);
    expect(stale.headers['cache-status']).toBe('Portico; fwd=stale; fwd-status=503; detail=stale-if-error');
    clock.advance(60);
    expect((await gateway.get('/v1/things')).status).toBe(503);
  });

  it('serves stale when the origin cannot be reached within stale-if-error', async () => {
    await setup(() => ({
      headers: { date: clock.date(), 'cache-control': 'max-age=10, stale-if-error=60' },
      body: 'kept',
    }));
    await gateway.get('/v1/things');
    clock.advance(20);
    await origin.close();
    const stale = await gateway.get('/v1/things');
    expect(stale.body).toBe('kept');
    expect(stale.headers['cache-status']).toContain('detail=stale-if-error');
  });
});

describe('Vary', () => {
  it('keeps one response per variant', async () => {
    await setup((request) => ({
      headers: { date: clock.date(), 'cache-control': 'max-age=60', vary: 'Accept-Language' },
      body: `lang ${request.headers['accept-language']}`,
    }));
    await gateway.get('/v1/things', { 'accept-language': 'fr' });
    const de = await gateway.get('/v1/things', { 'accept-language': 'de' });
    expect(de.headers['cache-status']).toContain('fwd=vary-miss');
    expect((await gateway.get('/v1/things', { 'accept-language': 'fr' })).body).toBe('lang fr');
    expect((await gateway.get('/v1/things', { 'accept-language': 'de' })).body).toBe('lang de');
    expect(origin.count()).toBe(2);
  });

  /** An origin varying on `field`, answering in `language` when one is given. */
  function varying(field: string, language?: string): OriginHandler {
    return (request) => ({
      headers: {
        date: clock.date(),
        'cache-control': 'max-age=5000',
        vary: field,
        ...(language === undefined ? {} : { 'content-language': language }),
      },
      body: `variant ${origin.count(request.path)}`,
    });
  }

  // The suite's vary-normalise-lang-order, -lang-case, -lang-space (4.1: "by standard semantics").
  it.each([
    ['vary-normalise-lang-order', 'de, en'],
    ['vary-normalise-lang-case', 'eN, De'],
    ['vary-normalise-lang-space', ' en ,   de'],
    ['equal weights written differently', 'de;q=1.0, en;Q=1'],
  ])('%s: reuses the en, de variant for %j', async (_id, asked) => {
    await setup(varying('Accept-Language'));
    await gateway.get('/v1/things', { 'accept-language': 'en, de' });
    const again = await gateway.get('/v1/things', { 'accept-language': asked });
    expect(again.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(again.body).toBe('variant 1');
  });

  it('keeps variants apart when the weights differ, and normalises Accept and Accept-Encoding too', async () => {
    await setup(varying('Accept-Language, Accept, Accept-Encoding'));
    const base = {
      'accept-language': 'en, de;q=0.5',
      accept: 'text/html, application/json',
      'accept-encoding': 'gzip, br',
    };
    await gateway.get('/v1/things', base);
    const same = await gateway.get('/v1/things', {
      'accept-language': 'DE;q=0.50, en',
      accept: 'Application/JSON,text/html',
      'accept-encoding': 'br,GZIP',
    });
    expect(same.headers['cache-status']).toMatch(/^Portico; hit/);
    // Another weight is another preference: the service may answer otherwise.
    const other = await gateway.get('/v1/things', { ...base, 'accept-language': 'de, en;q=0.5' });
    expect(other.headers['cache-status']).toContain('fwd=vary-miss');
    // A member that does not parse is compared as written.
    await gateway.get('/v1/things', { ...base, accept: 'text/html;q=2, application/json' });
    const odd = await gateway.get('/v1/things', { ...base, accept: 'application/json, text/html;q=2' });
    expect(odd.headers['cache-status']).toContain('fwd=vary-miss');
    expect(origin.count()).toBe(4);
  });

  it('vary-normalise-lang-select: reuses a response for the one language the request prefers', async () => {
    await setup(varying('Accept-Language', 'de'));
    await gateway.get('/v1/things', { 'accept-language': 'en, de' });
    const selected = await gateway.get('/v1/things', { 'accept-language': 'fr;q=0.5, de;q=1.0' });
    expect(selected.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(selected.headers['content-language']).toBe('de');
    // Not when another language weighs as much, is preferred, or only a prefix matches.
    for (const asked of ['fr, de', 'fr, de;q=0.9', 'de-CH', 'de;q=0', '*']) {
      const miss = await gateway.get('/v1/things', { 'accept-language': asked });
      expect(miss.headers['cache-status'], asked).toContain('fwd=vary-miss');
    }
  });

  it('selects by language only when every other Vary field matches', async () => {
    await setup(varying('Accept-Language, Accept', 'de'));
    await gateway.get('/v1/things', { 'accept-language': 'de', accept: 'text/plain' });
    const otherAccept = await gateway.get('/v1/things', {
      'accept-language': 'de, fr;q=0.1',
      accept: 'text/html',
    });
    expect(otherAccept.headers['cache-status']).toContain('fwd=vary-miss');
    const sameAccept = await gateway.get('/v1/things', {
      'accept-language': 'de, fr;q=0.1',
      accept: 'text/plain',
    });
    expect(sameAccept.headers['cache-status']).toMatch(/^Portico; hit/);
  });
});

describe('a POST answer reused for GET (RFC 9111 section 4, RFC 9110 section 9.3.3)', () => {
  /** An origin whose POST answers carry `post` headers; a GET answer says it came from GET. */
  function posting(post: Record<string, string>, status = 200): OriginHandler {
    return (request) =>
      request.method === 'POST'
        ? { status, headers: { date: clock.date(), ...post }, body: 'from POST' }
        : { headers: { date: clock.date(), 'cache-control': 'max-age=60' }, body: 'from GET' };
  }
  const thirtyDays = () => new Date(clock.now() + 30 * 86400_000).toUTCString();

  it('method-POST: stores a fresh POST answer whose Content-Location is its target, and answers GET with it', async () => {
    await setup(posting({}));
    // Content-Location absolute, as the suite sends it, and relative.
    for (const [path, location] of [
      ['/v1/things', () => `${gateway.url}/v1/things`],
      ['/v1/other?a=1', () => '/v1/other?a=1'],
    ] as const) {
      origin.setHandler(posting({ expires: thirtyDays(), 'content-location': location() }));
      const post = await gateway.send('POST', path, { 'content-type': 'text/plain' }, '12345');
      expect(post.body).toBe('from POST');
      expect(post.headers['cache-status']).toContain('fwd=method; fwd-status=200');
      const get = await gateway.get(path);
      expect(get.headers['cache-status'], path).toMatch(/^Portico; hit/);
      expect(get.body).toBe('from POST');
    }
    expect(origin.requests.map((r) => r.method)).toEqual(['POST', 'POST']);
  });

  it('still invalidates first: the stored GET answer is replaced by the POST answer', async () => {
    await setup(posting({ 'cache-control': 'max-age=60', 'content-location': '/v1/things' }));
    expect((await gateway.get('/v1/things')).body).toBe('from GET');
    await gateway.send('POST', '/v1/things', {}, 'x');
    const get = await gateway.get('/v1/things');
    expect(get.body).toBe('from POST');
    expect(get.headers['cache-status']).toMatch(/^Portico; hit/);
  });

  it.each([
    ['another Content-Location', { 'cache-control': 'max-age=60', 'content-location': '/v1/elsewhere' }, 200],
    [
      'another host',
      { 'cache-control': 'max-age=60', 'content-location': 'https://other.example/v1/things' },
      200,
    ],
    ['another query', { 'cache-control': 'max-age=60', 'content-location': '/v1/things?b=2' }, 200],
    ['no Content-Location', { 'cache-control': 'max-age=60' }, 200],
    ['no explicit freshness', { 'cache-control': 'public', 'content-location': '/v1/things' }, 200],
    ['a 201', { 'cache-control': 'max-age=60', 'content-location': '/v1/things' }, 201],
    ['no-store', { 'cache-control': 'max-age=60, no-store', 'content-location': '/v1/things' }, 200],
  ] as const)('does not store a POST answer with %s', async (_case, headers, status) => {
    await setup(posting(headers, status));
    await gateway.send('POST', '/v1/things', {}, 'x');
    const get = await gateway.get('/v1/things');
    expect(get.body).toBe('from GET');
    expect(get.headers['cache-status']).toContain('fwd=uri-miss');
  });

  it("keeps a customer's POST answer to that customer unless it may be shared (3.5)", async () => {
    await setup(posting({ 'cache-control': 'max-age=60', 'content-location': '/v1/things' }));
    await gateway.send('POST', '/v1/things', { authorization: 'Test alice orders:read' }, 'x');
    const anonymous = await gateway.get('/v1/things');
    expect(anonymous.body).toBe('from GET');
    origin.setHandler(posting({ 'portico-cache-control': 'max-age=60', 'content-location': '/v1/mine' }));
    await gateway.send('POST', '/v1/mine', { authorization: 'Test alice orders:read' }, 'x');
    const alice = await gateway.get('/v1/mine', { authorization: 'Test alice orders:read' });
    expect(alice.body).toBe('from POST');
    expect(alice.headers['cache-status']).toMatch(/^Portico; hit/);
    const bob = await gateway.get('/v1/mine', { authorization: 'Test bob orders:read' });
    expect(bob.body).toBe('from GET');
  });
});

describe('targeted headers, purge, metrics', () => {
  it('obeys Portico-Cache-Control over Cache-Control and strips both service headers', async () => {
    await setup(
      fixed({
        'cache-control': 'no-store',
        'portico-cache-control': 'max-age=30',
        'portico-invalidates': '</v1/x>',
      }),
    );
    const first = await gateway.get('/v1/things');
    expect(first.headers['portico-cache-control']).toBeUndefined();
    expect(first.headers['portico-invalidates']).toBeUndefined();
    const hit = await gateway.get('/v1/things');
    expect(hit.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(hit.headers['portico-cache-control']).toBeUndefined();
    expect(hit.headers['cache-control']).toBe('no-store');
  });

  it('ignores a targeted field that does not parse (RFC 9213 section 2.1)', async () => {
    await setup(fixed({ 'cache-control': 'no-store', 'portico-cache-control': 'max-age=30,,' }));
    await gateway.get('/v1/things');
    expect((await gateway.get('/v1/things')).headers['cache-status']).toContain('detail=no-store');
  });

  it('purges by path prefix and reports figures in Prometheus', async () => {
    await setup(fixed({ 'cache-control': 'max-age=60' }));
    await gateway.get('/v1/orders/1');
    await gateway.get('/v1/orders/2?x=1');
    await gateway.get('/v1/invoices/1');
    await gateway.get('/v1/invoices/1');
    expect(gateway.cache.purge('/v1/orders')).toBe(2);
    expect(gateway.cache.stats().entries).toBe(1);
    const registry = new Registry();
    registerCacheMetrics(registry, gateway.cache);
    const text = await registry.metrics();
    expect(text).toContain('portico_cache_requests_total{result="hit"} 1');
    expect(text).toContain('portico_cache_requests_total{result="miss"} 3');
    expect(text).toContain('portico_cache_hit_ratio 0.25');
    expect(text).toMatch(/portico_cache_bytes [1-9]/);
    expect(text).toContain('portico_cache_entries 1');
  });
});

describe('stored header fields', () => {
  it('omits the fields named by no-cache="..." and reuses the rest (5.2.2.4)', async () => {
    await setup(fixed({ 'cache-control': ['no-cache="a, b"', 'max-age=60'], a: '1', b: '2', c: '3' }));
    const first = await gateway.get('/v1/things');
    expect(first.headers['a']).toBe('1');
    const hit = await gateway.get('/v1/things');
    expect(hit.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(hit.headers['a']).toBeUndefined();
    expect(hit.headers['b']).toBeUndefined();
    expect(hit.headers['c']).toBe('3');
  });

  it('gives a 304 Set-Cookie to the client that caused it, and does not store it for others', async () => {
    await setup((request) =>
      request.headers['if-none-match'] === '"k"'
        ? {
            status: 304,
            headers: { date: clock.date(), etag: '"k"', 'cache-control': 'max-age=60', 'set-cookie': 'n=1' },
          }
        : { headers: { date: clock.date(), etag: '"k"', 'cache-control': 'max-age=1' }, body: 'k' },
    );
    await gateway.get('/v1/things');
    clock.advance(2);
    const revalidated = await gateway.get('/v1/things');
    expect(revalidated.headers['set-cookie']).toBe('n=1');
    const next = await gateway.get('/v1/things');
    expect(next.headers['set-cookie']).toBeUndefined();
    expect(next.headers['cache-status']).toContain('fwd=uri-miss');
  });

  it('ignores Pragma, deprecated by RFC 9111 section 5.4', async () => {
    await setup(fixed({ 'cache-control': 'max-age=60', pragma: 'no-cache' }));
    await gateway.get('/v1/things');
    expect((await gateway.get('/v1/things', { pragma: 'no-cache' })).headers['cache-status']).toMatch(
      /^Portico; hit/,
    );
  });
});

describe('a disconnected origin (4.2.4)', () => {
  it('serves stale when the origin cannot be reached, unless must-revalidate forbids it', async () => {
    await setup((request) => ({
      headers: {
        date: clock.date(),
        'cache-control': request.path.endsWith('strict') ? 'max-age=10, must-revalidate' : 'max-age=10',
      },
      body: request.path,
    }));
    await gateway.get('/v1/lenient');
    await gateway.get('/v1/strict');
    clock.advance(20);
    await origin.close();
    const lenient = await gateway.get('/v1/lenient');
    expect(lenient.body).toBe('/v1/lenient');
    expect(lenient.headers['cache-status']).toBe('Portico; fwd=stale; detail=origin-unreachable');
    const strict = await gateway.get('/v1/strict');
    expect(strict.status).toBe(502);
    expect(strict.headers['cache-status']).toBe('Portico; fwd=stale; detail=origin-error');
  });
});

describe('admin purge endpoint', () => {
  it('purges by prefix over HTTP and refuses anything else', async () => {
    await setup(fixed({ 'cache-control': 'max-age=60' }));
    await gateway.get('/v1/orders/1');
    const token = 'rfc9111-admin-token-0123456789abcdef';
    const guard = createAdminGuard(token, '127.0.0.1');
    const admin = createServer((req, res) => {
      if (!handlePurge(gateway.cache, req, res, guard)) res.writeHead(404).end();
    });
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    await new Promise<void>((resolve) => admin.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(admin.address() as AddressInfo).port}`;
    try {
      const purged = await fetch(`${base}/cache/purge?prefix=/v1/orders`, { method: 'POST', headers });
      expect(await purged.json()).toEqual({ purged: 1, prefix: '/v1/orders' });
      expect((await fetch(`${base}/cache/purge?prefix=v1`, { method: 'POST', headers })).status).toBe(400);
      expect((await fetch(`${base}/cache/purge?prefix=/v1`)).status).toBe(405);
      expect((await gateway.get('/v1/orders/1')).headers['cache-status']).toContain('fwd=uri-miss');
    } finally {
      await new Promise<void>((resolve) => admin.close(() => resolve()));
    }
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}
