/**
 * Range requests answered from a fresh complete stored response (RFC 9111 sections 3.3-3.4,
 * RFC 9110 section 14), over real sockets: single and multiple ranges, If-Range, 416, and
 * per-customer partitions as for every stored response.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClock, startCacheGateway, type CacheGateway, type Clock } from './support/cache-gateway.ts';
import { startOrigin, type TestOrigin } from './support/origin.ts';

const BODY = 'abcdefghijklmnopqrstuvwxyz';
const LAST_MODIFIED = 'Sat, 21 Nov 2026 12:00:00 GMT';

let origin: TestOrigin;
let gateway: CacheGateway;
let clock: Clock;

afterEach(async () => {
  await gateway.close();
  await origin.close();
});

/** An origin that ignores Range (as many do) and sends `etag`; the gateway has stored it once. */
async function setup(etag = '"r1"', route: { auth?: 'required' } = {}): Promise<void> {
  clock = createClock();
  origin = await startOrigin((request) => ({
    headers: {
      date: clock.date(),
      etag,
      'last-modified': LAST_MODIFIED,
      'content-type': 'text/plain',
      'cache-control': 'max-age=60',
      ...(request.customer === undefined
        ? {}
        : { 'cache-control': 'private', 'portico-cache-control': 'max-age=60' }),
    },
    body: request.customer === undefined ? BODY : `${BODY}:${request.customer}`,
  }));
  gateway = await startCacheGateway({ upstream: origin.url, clock, route });
}

describe('RFC 9110 section 14.1.2 and 15.3.7: 206 from a fresh stored response (RFC 9111 section 3.4)', () => {
  it('answers one range, a suffix range, an open range and a range past the end from the cache', async () => {
    await setup();
    await gateway.get('/v1/file');
    const cases: [string, string, string][] = [
      ['bytes=0-4', 'abcde', 'bytes 0-4/26'],
      ['bytes=-3', 'xyz', 'bytes 23-25/26'],
      ['bytes=20-', 'uvwxyz', 'bytes 20-25/26'],
      ['bytes=24-1000', 'yz', 'bytes 24-25/26'],
      ['Bytes=1-1', 'b', 'bytes 1-1/26'],
      ['bytes=-100', BODY, 'bytes 0-25/26'],
    ];
    for (const [range, body, contentRange] of cases) {
      const response = await gateway.get('/v1/file', { range });
      expect(response.status, range).toBe(206);
      expect(response.body, range).toBe(body);
      expect(response.headers['content-range'], range).toBe(contentRange);
      expect(response.headers['content-length'], range).toBe(String(body.length));
      expect(response.headers['etag'], range).toBe('"r1"');
      expect(response.headers['cache-status'], range).toMatch(/^Portico; hit/);
    }
    expect(origin.count()).toBe(1);
  });

  it('answers several ranges as multipart/byteranges, and coalesces overlapping ones', async () => {
    await setup();
    await gateway.get('/v1/file');
    const response = await gateway.get('/v1/file', { range: 'bytes=0-1, -2' });
    expect(response.status).toBe(206);
    const boundary = /^multipart\/byteranges; boundary=(\S+)$/.exec(
      response.headers['content-type'] ?? '',
    )?.[1];
    expect(boundary).toBeDefined();
    expect(response.headers['content-range']).toBeUndefined();
    expect(response.body).toBe(
      `\r\n--${boundary}\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-1/26\r\n\r\nab` +
        `\r\n--${boundary}\r\nContent-Type: text/plain\r\nContent-Range: bytes 24-25/26\r\n\r\nyz` +
        `\r\n--${boundary}--\r\n`,
    );
    expect(response.headers['content-length']).toBe(String(Buffer.byteLength(response.body)));
    const overlapping = await gateway.get('/v1/file', { range: 'bytes=2-5, 4-8, 9-9' });
    expect(overlapping.headers['content-range']).toBe('bytes 2-9/26');
    expect(overlapping.body).toBe('cdefghij');
    expect(origin.count()).toBe(1);
  });

  it('sends the whole 200 for a Range it does not understand or that is invalid (14.2)', async () => {
    await setup();
    await gateway.get('/v1/file');
    for (const range of ['bytes=5-1', 'bytes=abc', 'items=0-1', 'bytes = 0-1', 'bytes=0-1;x']) {
      const response = await gateway.get('/v1/file', { range });
      expect(response.status, range).toBe(200);
      expect(response.body, range).toBe(BODY);
    }
    expect(origin.count()).toBe(1);
  });

  it('answers 416 with Content-Range for a Range none of whose ranges is satisfiable (15.5.17)', async () => {
    await setup();
    await gateway.get('/v1/file');
    const response = await gateway.get('/v1/file', { range: 'bytes=26-30, 100-' });
    expect(response.status).toBe(416);
    expect(response.headers['content-range']).toBe('bytes */26');
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(response.body)).toMatchObject({ code: 'ERR_RANGE_NOT_SATISFIABLE' });
    expect(origin.count()).toBe(1);
  });

  it('ignores Range on HEAD, and answers a matching If-None-Match with 304 before any range (13.2.2)', async () => {
    await setup();
    await gateway.get('/v1/file');
    const head = await gateway.send('HEAD', '/v1/file', { range: 'bytes=0-1' });
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe('26');
    const notModified = await gateway.get('/v1/file', { range: 'bytes=0-1', 'if-none-match': '"r1"' });
    expect(notModified.status).toBe(304);
    expect(origin.count()).toBe(1);
  });
});

describe('RFC 9110 section 13.1.5: If-Range', () => {
  it('applies the Range only for a strong ETag that matches', async () => {
    await setup();
    await gateway.get('/v1/file');
    expect((await gateway.get('/v1/file', { range: 'bytes=0-1', 'if-range': '"r1"' })).status).toBe(206);
    for (const condition of ['"r0"', 'W/"r1"', 'garbage']) {
      const response = await gateway.get('/v1/file', { range: 'bytes=0-1', 'if-range': condition });
      expect(response.status, condition).toBe(200);
      expect(response.body, condition).toBe(BODY);
    }
  });

  it('never matches a weak stored ETag', async () => {
    await setup('W/"r1"');
    await gateway.get('/v1/file');
    expect((await gateway.get('/v1/file', { range: 'bytes=0-1', 'if-range': 'W/"r1"' })).status).toBe(200);
    expect((await gateway.get('/v1/file', { range: 'bytes=0-1' })).status).toBe(206);
  });

  it('applies the Range for a date equal to a strong Last-Modified, not for another date', async () => {
    await setup();
    await gateway.get('/v1/file');
    expect((await gateway.get('/v1/file', { range: 'bytes=0-1', 'if-range': LAST_MODIFIED })).status).toBe(
      206,
    );
    const other = await gateway.get('/v1/file', {
      range: 'bytes=0-1',
      'if-range': 'Sat, 21 Nov 2026 11:00:00 GMT',
    });
    expect(other.status).toBe(200);
    expect(origin.count()).toBe(1);
  });
  it('takes a Last-Modified under 60 s before Date for weak: the whole response (RFC 9110 8.8.2.2)', async () => {
    clock = createClock();
    const lastModified = new Date(clock.now() - 30_000).toUTCString();
    origin = await startOrigin(() => ({
      headers: { date: clock.date(), 'last-modified': lastModified, 'cache-control': 'max-age=60' },
      body: BODY,
    }));
    gateway = await startCacheGateway({ upstream: origin.url, clock });
    await gateway.get('/v1/file');
    const weak = await gateway.get('/v1/file', { range: 'bytes=0-1', 'if-range': lastModified });
    expect(weak.status).toBe(200);
    expect(weak.body).toBe(BODY);
    expect(origin.count()).toBe(1);
  });
});

describe('RFC 9111 section 3.3: partial and stale responses', () => {
  it('forwards a range request for a stale stored response untouched, and stores nothing partial', async () => {
    await setup();
    await gateway.get('/v1/file');
    clock.advance(61);
    origin.setHandler((request) => ({
      status: 206,
      headers: {
        date: clock.date(),
        etag: '"r1"',
        'cache-control': 'max-age=60',
        'content-range': 'bytes 0-1/26',
      },
      body: request.headers.range === 'bytes=0-1' ? 'ab' : 'wrong',
    }));
    const response = await gateway.get('/v1/file', { range: 'bytes=0-1', 'if-range': '"r1"' });
    expect(response.status).toBe(206);
    expect(response.body).toBe('ab');
    expect(response.headers['cache-status']).toBe('Portico; fwd=bypass; detail=range');
    expect(origin.requests[1]?.headers['range']).toBe('bytes=0-1');
    expect(origin.requests[1]?.headers['if-range']).toBe('"r1"');
    expect(origin.requests[1]?.headers['if-none-match']).toBeUndefined();
  });

  it("keeps ranges per customer: one customer never gets bytes of another customer's stored response", async () => {
    await setup('"r1"', { auth: 'required' });
    const a = { authorization: 'Test cust-a orders:read' };
    const b = { authorization: 'Test cust-b orders:read' };
    await gateway.get('/v1/file', a);
    const mine = await gateway.get('/v1/file', { ...a, range: 'bytes=26-' });
    expect(mine.status).toBe(206);
    expect(mine.body).toBe(':cust-a');
    const theirs = await gateway.get('/v1/file', { ...b, range: 'bytes=26-' });
    expect(theirs.headers['cache-status']).toContain('fwd=bypass; detail=range');
    expect(theirs.body).toBe(`${BODY}:cust-b`);
    expect(origin.count()).toBe(2);
  });
});

/**
 * An origin that serves ranges itself: 206 for `bytes=a-b` and `bytes=a-`, with ETag
 * `"v<version>"` (or the one `etag` makes; none when it gives undefined) and, with
 * `lastModifiedAgo`, a Last-Modified that many seconds before Date. It honours If-Range: a
 * validator other than the current one gets the whole 200.
 */
async function setupRangeOrigin(state: {
  version: number;
  etag?: (v: number) => string | undefined;
  lastModifiedAgo?: number;
}) {
  clock = createClock();
  origin = await startOrigin((request) => {
    const etag = state.etag === undefined ? `"v${state.version}"` : state.etag(state.version);
    if (request.method === 'POST') return { headers: { date: clock.date(), 'cache-control': 'no-store' } };
    const body = request.customer === undefined ? BODY : BODY.toUpperCase();
    const lastModified =
      state.lastModifiedAgo === undefined
        ? undefined
        : new Date(clock.now() - state.lastModifiedAgo * 1000 + state.version * 1000).toUTCString();
    const headers = {
      date: clock.date(),
      etag,
      'last-modified': lastModified,
      'content-type': 'text/plain',
      ...(request.customer === undefined
        ? { 'cache-control': 'max-age=60' }
        : { 'cache-control': 'private', 'portico-cache-control': 'max-age=60' }),
    };
    const ifRange = request.headers['if-range'];
    if (ifRange !== undefined && ifRange !== (etag ?? lastModified)) return { headers, body };
    const match = /^bytes=(\d+)-(\d*)$/.exec(String(request.headers.range ?? ''));
    if (match === null) return { headers, body };
    const [start, end] = [Number(match[1]), match[2] === '' ? body.length - 1 : Number(match[2])];
    return {
      status: 206,
      headers: { ...headers, 'content-range': `bytes ${start}-${end}/${body.length}` },
      body: body.slice(start, end + 1),
    };
  });
}

describe('RFC 9111 section 3.4: combining partial content', () => {
  it('stores the whole response once 206 pieces with one strong validator cover it', async () => {
    await setupRangeOrigin({ version: 1 });
    gateway = await startCacheGateway({ upstream: origin.url, clock });
    expect((await gateway.get('/v1/file', { range: 'bytes=0-9' })).body).toBe('abcdefghij');
    expect((await gateway.get('/v1/file', { range: 'bytes=10-25' })).body).toBe('klmnopqrstuvwxyz');
    const range = await gateway.get('/v1/file', { range: 'bytes=5-14' });
    expect(range.status).toBe(206);
    expect(range.body).toBe('fghijklmno');
    expect(range.headers['cache-status']).toMatch(/^Portico; hit/);
    const whole = await gateway.get('/v1/file');
    expect(whole.status).toBe(200);
    expect(whole.body).toBe(BODY);
    expect(whole.headers['content-range']).toBeUndefined();
    expect(whole.headers['etag']).toBe('"v1"');
    expect(origin.count()).toBe(2);
  });

  it('does not combine pieces whose validators differ, nor pieces with a weak validator', async () => {
    const state = { version: 1 };
    await setupRangeOrigin(state);
    gateway = await startCacheGateway({ upstream: origin.url, clock });
    await gateway.get('/v1/file', { range: 'bytes=0-9' });
    state.version = 2;
    await gateway.get('/v1/file', { range: 'bytes=10-25' });
    expect((await gateway.get('/v1/file')).headers['cache-status']).toContain('fwd=uri-miss');
    await gateway.close();
    await origin.close();

    await setupRangeOrigin({ version: 1, etag: (v) => `W/"v${v}"` });
    gateway = await startCacheGateway({ upstream: origin.url, clock });
    await gateway.get('/v1/file', { range: 'bytes=0-9' });
    await gateway.get('/v1/file', { range: 'bytes=10-25' });
    expect((await gateway.get('/v1/file')).headers['cache-status']).toContain('fwd=uri-miss');
  });

  it('drops the pieces kept so far when a write invalidates the path (4.4)', async () => {
    await setupRangeOrigin({ version: 1 });
    gateway = await startCacheGateway({ upstream: origin.url, clock });
    await gateway.get('/v1/file', { range: 'bytes=0-9' });
    await gateway.send('POST', '/v1/file', {}, 'x');
    await gateway.get('/v1/file', { range: 'bytes=10-25' });
    expect((await gateway.get('/v1/file')).headers['cache-status']).toContain('fwd=uri-miss');
  });

  it('never combines the pieces of two customers', async () => {
    await setupRangeOrigin({ version: 1 });
    gateway = await startCacheGateway({ upstream: origin.url, clock, route: { auth: 'required' } });
    const a = { authorization: 'Test cust-a orders:read' };
    const b = { authorization: 'Test cust-b orders:read' };
    await gateway.get('/v1/file', { ...a, range: 'bytes=0-9' });
    await gateway.get('/v1/file', { ...b, range: 'bytes=10-25' });
    expect((await gateway.get('/v1/file', a)).headers['cache-status']).toContain('fwd=uri-miss');
    await gateway.get('/v1/file', { ...b, range: 'bytes=0-9' });
    const whole = await gateway.get('/v1/file', b);
    expect(whole.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(whole.body).toBe(BODY.toUpperCase());
  });
});

describe('RFC 9111 sections 3.3 and 3.4: completing held pieces', () => {
  it('partial-store-partial-complete: asks only for the rest, with If-Range, and answers the whole', async () => {
    await setupRangeOrigin({ version: 1 });
    gateway = await startCacheGateway({ upstream: origin.url, clock });
    await gateway.get('/v1/file', { range: 'bytes=0-9' });
    const whole = await gateway.get('/v1/file');
    expect(origin.requests[1]?.headers['range']).toBe('bytes=10-');
    expect(origin.requests[1]?.headers['if-range']).toBe('"v1"');
    expect(whole.status).toBe(200);
    expect(whole.body).toBe(BODY);
    expect(whole.headers['content-range']).toBeUndefined();
    expect(whole.headers['content-length']).toBe(String(BODY.length));
    const again = await gateway.get('/v1/file');
    expect(again.headers['cache-status']).toMatch(/^Portico; hit/);
    expect(again.body).toBe(BODY);
    expect(origin.count()).toBe(2);
  });

  it('takes the whole 200 when the representation changed since the pieces (If-Range)', async () => {
    const state = { version: 1 };
    await setupRangeOrigin(state);
    gateway = await startCacheGateway({ upstream: origin.url, clock });
    await gateway.get('/v1/file', { range: 'bytes=0-9' });
    state.version = 2;
    const whole = await gateway.get('/v1/file');
    expect(origin.requests[1]?.headers['if-range']).toBe('"v1"');
    expect(whole.status).toBe(200);
    expect(whole.body).toBe(BODY);
    expect(whole.headers['etag']).toBe('"v2"');
    expect((await gateway.get('/v1/file')).headers['etag']).toBe('"v2"');
    expect(origin.count()).toBe(2);
  });

  it('combines and completes pieces whose only validator is a strong Last-Modified (RFC 9110 8.8.2.2)', async () => {
    await setupRangeOrigin({ version: 1, etag: () => undefined, lastModifiedAgo: 3600 });
    gateway = await startCacheGateway({ upstream: origin.url, clock });
    await gateway.get('/v1/file', { range: 'bytes=0-9' });
    await gateway.get('/v1/file', { range: 'bytes=10-25' });
    const combined = await gateway.get('/v1/file', { range: 'bytes=5-14' });
    expect(combined.headers['cache-status']).toMatch(/^Portico; hit/);
    await gateway.close();
    await origin.close();

    await setupRangeOrigin({ version: 1, etag: () => undefined, lastModifiedAgo: 3600 });
    gateway = await startCacheGateway({ upstream: origin.url, clock });
    await gateway.get('/v1/file', { range: 'bytes=0-9' });
    const whole = await gateway.get('/v1/file');
    expect(origin.requests[1]?.headers['range']).toBe('bytes=10-');
    expect(origin.requests[1]?.headers['if-range']).toMatch(/GMT$/);
    expect(whole.body).toBe(BODY);
  });

  it('keeps no piece with a weak validator: a Last-Modified under 60 s before Date, or a weak ETag', async () => {
    for (const state of [
      { version: 1, etag: () => undefined, lastModifiedAgo: 30 },
      { version: 1, etag: () => 'W/"w"', lastModifiedAgo: 3600 },
    ]) {
      await setupRangeOrigin(state);
      gateway = await startCacheGateway({ upstream: origin.url, clock });
      await gateway.get('/v1/file', { range: 'bytes=0-9' });
      const whole = await gateway.get('/v1/file');
      expect(origin.requests[1]?.headers['range']).toBeUndefined();
      expect(whole.body).toBe(BODY);
      await gateway.close();
      await origin.close();
    }
    // afterEach closes these again.
    await setupRangeOrigin({ version: 1 });
    gateway = await startCacheGateway({ upstream: origin.url, clock });
  });

  it("never completes one customer's pieces for another", async () => {
    await setupRangeOrigin({ version: 1 });
    gateway = await startCacheGateway({ upstream: origin.url, clock, route: { auth: 'required' } });
    await gateway.get('/v1/file', { authorization: 'Test cust-a orders:read', range: 'bytes=0-9' });
    const other = await gateway.get('/v1/file', { authorization: 'Test cust-b orders:read' });
    expect(origin.requests[1]?.headers['range']).toBeUndefined();
    expect(other.body).toBe(BODY.toUpperCase());
  });
});
