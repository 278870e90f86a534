/**
 * Response compression at the edge, over real sockets: a real gateway (HTTPS, the whole
 * pipeline with its cache) in front of a scripted upstream. Bodies are decompressed with
 * node:zlib and compared byte for byte; each encoding is its own cache variant; entity tags
 * get a suffix per encoding that conditional requests can send back.
 */
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../../resource-service/api-docs/document.ts';
import { startPortico, type Portico } from '../../e2e/support/portico.ts';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const BIG = JSON.stringify({
  data: Array.from({ length: 60 }, (_, i) => ({ id: `ord_${i}`, status: 'pending' })),
});
const SMALL = JSON.stringify({ ok: true });
// Served as the resource service serves it (resource-service/app.ts): 53 KB, one res.end().
const OPENAPI = JSON.stringify(buildOpenApiDocument());
let version = 1;
let swrVersion = 1;

function answer(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '').split('?')[0];
  // With a length, as the service sends its JSON (the gateway then has it whole in memory).
  const json = (headers: Record<string, string>, body: string | Buffer, status = 200) => {
    const length = String(Buffer.byteLength(body));
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': length, ...headers });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  switch (path) {
    case '/v1/big':
      return json({ 'cache-control': 'public, max-age=60', etag: '"big1"', vary: 'Accept-Language' }, BIG);
    case '/v1/small':
      return json({ 'cache-control': 'public, max-age=60' }, SMALL);
    case '/v1/no-transform':
      return json({ 'cache-control': 'public, max-age=60, no-transform' }, BIG);
    case '/v1/encoded':
      return json({ 'content-encoding': 'gzip', 'cache-control': 'no-store' }, gzipSync(BIG));
    case '/v1/uncached':
      return json({ 'cache-control': 'no-store' }, BIG);
    case '/v1/chunked':
      // No length: streamed through a compressor, flushed as it comes.
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
      res.write(BIG.slice(0, 1000));
      return void setTimeout(() => res.end(BIG.slice(1000)), 20);
    case '/v1/image':
      res.writeHead(200, { 'content-type': 'image/png', 'cache-control': 'no-store' });
      return void res.end(Buffer.alloc(4096, 7));
    case '/v1/partial':
      return json(
        { 'content-range': `bytes 0-${BIG.length - 1}/${BIG.length}`, 'cache-control': 'no-store' },
        BIG,
        206,
      );
    case '/v1/problem':
      res.writeHead(404, { 'content-type': 'application/problem+json', 'cache-control': 'no-store' });
      return void res.end(JSON.stringify({ status: 404, detail: 'x'.repeat(2000) }));
    case '/v1/openapi.json':
      res.setHeader('Content-Type', 'application/json');
      res.setHeader('Cache-Control', 'public, max-age=300');
      return void res.end(OPENAPI);
    case '/v1/orders/1': {
      // The service's optimistic concurrency: strong tags, 304 on If-None-Match, 412 on a stale If-Match.
      const etag = `"o1.${version}"`;
      if (req.method === 'PUT') {
        if (req.headers['if-match'] !== undefined && req.headers['if-match'] !== etag)
          return json({ 'cache-control': 'no-store' }, '{"status":412}', 412);
        version++;
        req.resume();
        return json({ 'cache-control': 'no-store', etag: `"o1.${version}"` }, '{"ok":true}');
      }
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, { etag, 'cache-control': 'public, no-cache' });
        return void res.end();
      }
      return json({ 'cache-control': 'public, no-cache', etag }, BIG);
    }
    case '/v1/swr': {
      // Stale after a second, then served stale while the cache revalidates in the background.
      const etag = `"swr${swrVersion}"`;
      const caching = { 'cache-control': 'public, max-age=1, stale-while-revalidate=60', etag };
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, caching);
        return void res.end();
      }
      return json(caching, BIG.replace('pending', `v${swrVersion}`));
    }
    default:
      req.resume();
      return json({ 'cache-control': 'no-store' }, '{"echo":true}');
  }
}

let upstream: RecordingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream(answer);
  gw = await startTestGateway(upstream.url, {
    routes: [
      { prefix: '/v1', upstream: upstream.url, auth: 'none', cache: true },
      // Under the cached /v1, whose cache it would inherit: it says it has none.
      { prefix: '/v1/uncached', upstream: upstream.url, auth: 'none', cache: false },
    ],
    rateLimits: { policies: [] },
  });
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});
beforeEach(() => {
  upstream.records.length = 0;
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  raw: Buffer;
}

async function get(
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
  body?: string,
): Promise<Answer> {
  const response = await request(`${gw.origin}${path}`, {
    method: method as 'GET',
    headers,
    dispatcher: gw.agent,
    ...(body === undefined ? {} : { body }),
  });
  const raw = Buffer.from(await response.body.arrayBuffer());
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers))
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  return { status: response.statusCode, headers: flat, raw };
}

function decoded(answer: Answer): string {
  const coding = answer.headers['content-encoding'];
  if (coding === 'br') return brotliDecompressSync(answer.raw).toString();
  if (coding === 'gzip') return gunzipSync(answer.raw).toString();
  return answer.raw.toString();
}

const upstreamCount = (path: string) => upstream.records.filter((r) => r.url === path).length;

describe('compressed responses', () => {
  it('sends br or gzip as the client asks, decompressing to the same bytes, with Vary merged', async () => {
    const br = await get('/v1/big', { 'accept-encoding': 'gzip, deflate, br' });
    expect(br.status).toBe(200);
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.raw.length).toBeLessThan(BIG.length / 3);
    expect(Number(br.headers['content-length'])).toBe(br.raw.length);
    expect(decoded(br)).toBe(BIG);
    // The upstream's Vary is kept, not overwritten (Kong #4782).
    expect(br.headers['vary']).toBe('Accept-Language, Accept-Encoding');

    const gzip = await get('/v1/big', { 'accept-encoding': 'gzip' });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(decoded(gzip)).toBe(BIG);
    expect(gzip.headers['vary']).toBe('Accept-Language, Accept-Encoding');
  });

  it('reads q-values: refused codings are not used, and nothing is compressed for a client that does not ask', async () => {
    expect(
      (await get('/v1/big', { 'accept-encoding': 'br;q=0, gzip;q=0.5' })).headers['content-encoding'],
    ).toBe('gzip');
    expect(
      (await get('/v1/big', { 'accept-encoding': 'gzip;q=0.2, br;q=0.9' })).headers['content-encoding'],
    ).toBe('br');
    expect((await get('/v1/big', { 'accept-encoding': 'identity;q=0, *' })).headers['content-encoding']).toBe(
      'br',
    );
    expect(
      (await get('/v1/big', { 'accept-encoding': '*;q=0, identity' })).headers['content-encoding'],
    ).toBeUndefined();
    expect(
      (await get('/v1/big', { 'accept-encoding': 'deflate' })).headers['content-encoding'],
    ).toBeUndefined();
    const plain = await get('/v1/big');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.raw.toString()).toBe(BIG);
    // The answer still varies: another client would have had it compressed.
    expect(plain.headers['vary']).toBe('Accept-Language, Accept-Encoding');
  });

  it('leaves small, non-compressible, no-transform, already encoded, partial and HEAD answers as they are', async () => {
    const ask = { 'accept-encoding': 'br, gzip' };
    const small = await get('/v1/small', ask);
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(small.headers['vary']).toBeUndefined();
    expect(small.raw.toString()).toBe(SMALL);
    expect((await get('/v1/image', ask)).headers['content-encoding']).toBeUndefined();
    const noTransform = await get('/v1/no-transform', ask);
    expect(noTransform.headers['content-encoding']).toBeUndefined();
    expect(noTransform.raw.toString()).toBe(BIG);
    const asked = await get('/v1/big?no-transform', { ...ask, 'cache-control': 'no-transform' });
    expect(asked.headers['content-encoding']).toBeUndefined();
    expect(asked.raw.toString()).toBe(BIG);
    const encoded = await get('/v1/encoded', { 'accept-encoding': 'gzip, br' });
    expect(encoded.headers['content-encoding']).toBe('gzip');
    expect(decoded(encoded)).toBe(BIG);
    const partial = await get('/v1/partial', ask);
    expect(partial.status).toBe(206);
    expect(partial.headers['content-encoding']).toBeUndefined();
    const head = await get('/v1/no-transform', ask, 'HEAD');
    expect(head.headers['content-encoding']).toBeUndefined();
  });

  it("on a route without the cache too, where the upstream gets the client's own Accept-Encoding", async () => {
    const answer = await get('/v1/uncached', { 'accept-encoding': 'gzip, deflate, br' });
    expect(answer.headers['content-encoding']).toBe('br');
    expect(decoded(answer)).toBe(BIG);
    expect(upstream.records[0]?.headers['accept-encoding']).toBe('gzip, deflate, br');
  });

  it('compresses a body of unknown length as it streams', async () => {
    const chunked = await get('/v1/chunked', { 'accept-encoding': 'gzip' });
    expect(chunked.headers['content-encoding']).toBe('gzip');
    expect(chunked.headers['content-length']).toBeUndefined();
    expect(decoded(chunked)).toBe(BIG);
  });

  it('compresses problem+json too', async () => {
    const problem = await get('/v1/problem', { 'accept-encoding': 'gzip' });
    expect(problem.status).toBe(404);
    expect(problem.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(decoded(problem))).toMatchObject({ status: 404 });
  });

  it('sends the 53 KB OpenAPI document compressed (a streamed body), then from the cache without the upstream', async () => {
    const first = await get('/v1/openapi.json', { 'accept-encoding': 'br' });
    expect(first.headers['content-encoding']).toBe('br');
    expect(first.raw.length).toBeLessThan(12 * 1024);
    expect(decoded(first)).toBe(OPENAPI);
    const again = await get('/v1/openapi.json', { 'accept-encoding': 'gzip, deflate, br, zstd' });
    expect(again.headers['content-encoding']).toBe('br');
    expect(decoded(again)).toBe(OPENAPI);
    expect(again.headers['cache-status']).toContain('hit');
    expect(upstreamCount('/v1/openapi.json')).toBe(1);
  });
});

describe('each encoding is a cache variant of its own', () => {
  it('a client without Accept-Encoding after a br client gets identity; at most three variants', async () => {
    const path = '/v1/big?variants';
    const br = await get(path, { 'accept-encoding': 'br' });
    expect(br.headers['content-encoding']).toBe('br');
    const plain = await get(path);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.raw.toString()).toBe(BIG);
    const gzip = await get(path, { 'accept-encoding': 'gzip' });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(upstreamCount(path)).toBe(3);
    // Other spellings of the same three choices are hits on the variants already stored.
    for (const [spelling, coding] of [
      ['gzip, deflate, br', 'br'],
      ['br;q=1.0, gzip;q=0.8, *;q=0.1', 'br'],
      ['x-gzip, deflate', 'gzip'],
      ['deflate', undefined],
      ['identity', undefined],
    ] as const) {
      const hit = await get(path, { 'accept-encoding': spelling });
      expect(hit.headers['content-encoding'], spelling).toBe(coding);
      expect(hit.headers['cache-status'], spelling).toContain('hit');
      expect(decoded(hit)).toBe(BIG);
    }
    expect(upstreamCount(path)).toBe(3);
    // The upstream is asked for the one encoding chosen, so that what it sends fits the variant.
    expect(upstream.records.map((r) => r.headers['accept-encoding'])).toEqual(['br', 'identity', 'gzip']);
  });
});

describe('background revalidation (stale-while-revalidate) of a compressed variant', () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** Waits until the upstream has seen `count` requests for /v1/swr (the side call is async). */
  const untilUpstreamSaw = async (count: number) => {
    for (let i = 0; i < 100 && upstreamCount('/v1/swr') < count; i++) await sleep(20);
  };

  it("asks with the service's own tag (304 keeps the br variant) and stores a changed answer compressed", async () => {
    swrVersion = 1;
    const first = await get('/v1/swr', { 'accept-encoding': 'br' });
    expect(first.headers['etag']).toBe('"swr1-br"');

    // Stale: served as it is, revalidated in the background with the tag the service knows.
    await sleep(1100);
    expect(decoded(await get('/v1/swr', { 'accept-encoding': 'br' }))).toContain('"v1"');
    await untilUpstreamSaw(2);
    expect(upstream.records.filter((r) => r.url === '/v1/swr')[1]?.headers['if-none-match']).toBe('"swr1"');
    await sleep(50);
    const refreshed = await get('/v1/swr', { 'accept-encoding': 'br' });
    expect(refreshed.headers['cache-status']).toMatch(/^Portico; hit/);
    expect([refreshed.headers['content-encoding'], refreshed.headers['etag']]).toEqual(['br', '"swr1-br"']);

    // Changed upstream: the background 200 is stored as the br variant it revalidated.
    swrVersion = 2;
    await sleep(1100);
    await get('/v1/swr', { 'accept-encoding': 'br' });
    await untilUpstreamSaw(3);
    await sleep(50);
    const changed = await get('/v1/swr', { 'accept-encoding': 'br' });
    expect(changed.headers['cache-status']).toMatch(/^Portico; hit/);
    expect([changed.headers['content-encoding'], changed.headers['etag']]).toEqual(['br', '"swr2-br"']);
    expect(decoded(changed)).toContain('"v2"');
    expect(changed.headers['vary']).toMatch(/Accept-Encoding/i);
  }, 15_000);
});

describe('entity tags', () => {
  it('gives each encoding its own strong tag; the tag a client holds validates (304) and passes If-Match', async () => {
    version = 1;
    const br = await get('/v1/orders/1', { 'accept-encoding': 'br' });
    expect(br.headers['etag']).toBe('"o1.1-br"');
    const gzip = await get('/v1/orders/1', { 'accept-encoding': 'gzip' });
    expect(gzip.headers['etag']).toBe('"o1.1-gzip"');
    const plain = await get('/v1/orders/1');
    expect(plain.headers['etag']).toBe('"o1.1"');

    // A conditional GET with the br tag: the cache revalidates upstream with the service's own tag.
    upstream.records.length = 0;
    const notModified = await get('/v1/orders/1', { 'accept-encoding': 'br', 'if-none-match': '"o1.1-br"' });
    expect(notModified.status).toBe(304);
    expect(notModified.headers['etag']).toBe('"o1.1-br"');
    expect(upstream.records[0]?.headers['if-none-match']).toBe('"o1.1"');

    // Optimistic concurrency with the tag of the compressed representation still works...
    const put = await get(
      '/v1/orders/1',
      { 'if-match': '"o1.1-br"', 'content-type': 'application/json' },
      'PUT',
      '{}',
    );
    expect(put.status).toBe(200);
    expect(upstream.records.at(-1)?.headers['if-match']).toBe('"o1.1"');
    // ...and a stale one is still refused.
    const stale = await get(
      '/v1/orders/1',
      { 'if-match': '"o1.1-gzip"', 'content-type': 'application/json' },
      'PUT',
      '{}',
    );
    expect(stale.status).toBe(412);
  });

  it('keeps If-Range as sent: a range of the identity bytes would not fit a compressed copy', async () => {
    await get('/v1/echo', { 'if-range': '"o1.1-br"', range: 'bytes=0-10' });
    expect(upstream.records.at(-1)?.headers['if-range']).toBe('"o1.1-br"');
  });
});

describe('request bodies in a content coding', () => {
  it('answers 415 with Accept-Encoding, not 400, and sends nothing upstream', async () => {
    const refused = await get(
      '/v1/echo',
      { 'content-encoding': 'gzip', 'content-type': 'application/json' },
      'POST',
      gzipSync('{"a":1}').toString('latin1'),
    );
    expect(refused.status).toBe(415);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(refused.raw.toString())).toMatchObject({ code: 'ERR_UNSUPPORTED_MEDIA_TYPE' });
    expect(refused.headers['accept-encoding']).toBe('identity');
    expect(upstream.records).toHaveLength(0);

    const identity = await get(
      '/v1/echo',
      { 'content-encoding': 'identity', 'content-type': 'application/json' },
      'POST',
      '{}',
    );
    expect(identity.status).toBe(200);
  });
});

describe('with the real resource service (PostgreSQL) behind the gateway', () => {
  let portico: Portico;
  let agent: Agent;
  let origin: string;
  beforeAll(async () => {
    // The default routes: /v1 with authentication, the OpenAPI document without.
    portico = await startPortico({
      config: (service) => ({
        routes: [
          { prefix: '/v1', upstream: service, cache: true },
          { prefix: '/v1/openapi.json', upstream: service, auth: 'none', cache: true },
        ],
        rateLimits: { policies: [] },
      }),
    });
    agent = new Agent({ connect: { ca: portico.ca, servername: 'localhost' } });
    origin = `https://localhost:${portico.gateway.addresses.https.port}`;
  });
  afterAll(async () => {
    await agent.close();
    await portico.close();
  });

  async function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
    const response = await request(`${origin}${path}`, {
      method: method as 'GET',
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      dispatcher: agent,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const raw = Buffer.from(await response.body.arrayBuffer());
    const flat: Record<string, string> = {};
    for (const [name, value] of Object.entries(response.headers))
      if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
    return { status: response.statusCode, headers: flat, raw };
  }

  it('sends the 53 KB OpenAPI document as br to a client that asks, as curl --compressed does', async () => {
    const answer = await call('GET', '/v1/openapi.json', { 'accept-encoding': 'deflate, gzip, br, zstd' });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-encoding']).toBe('br');
    expect(answer.raw.length).toBeLessThan(12 * 1024);
    const document = JSON.parse(decoded(answer)) as { openapi: string };
    expect(document.openapi).toMatch(/^3\.1/);
    expect(decoded(answer).length).toBeGreaterThan(50 * 1024);
  });

  it("updates an order with If-Match carrying the tag of the compressed representation; a stale one gets the service's 412", async () => {
    const auth = { authorization: `Bearer ${await portico.token('cus-compress')}` };
    // Enough items that the order's JSON is above the threshold.
    const items = Array.from({ length: 25 }, (_, i) => ({ sku: `SKU-${i}`, quantity: 1, unit_price: 100 }));
    const created = await call('POST', '/v1/orders', auth, { items, currency: 'EUR' });
    expect(created.status).toBe(201);
    const id = (JSON.parse(decoded(created)) as { id: string }).id;

    const read = await call('GET', `/v1/orders/${id}`, { ...auth, 'accept-encoding': 'gzip' });
    expect(read.headers['content-encoding']).toBe('gzip');
    const etag = read.headers['etag'] ?? '';
    expect(etag).toMatch(/^"[^"]+-gzip"$/);
    expect(JSON.parse(decoded(read))).toMatchObject({ id, items });
    const again = await call('GET', `/v1/orders/${id}`, {
      ...auth,
      'accept-encoding': 'gzip',
      'if-none-match': etag,
    });
    expect(again.status).toBe(304);

    const replaced = await call(
      'PUT',
      `/v1/orders/${id}`,
      { ...auth, 'if-match': etag },
      { items: items.slice(1), currency: 'EUR' },
    );
    expect(replaced.status).toBe(200);
    const stale = await call(
      'PUT',
      `/v1/orders/${id}`,
      { ...auth, 'if-match': etag },
      { items, currency: 'EUR' },
    );
    expect(stale.status).toBe(412);
    expect(JSON.parse(decoded(stale))).toMatchObject({ code: 'ERR_PRECONDITION_FAILED' });
  });
});
