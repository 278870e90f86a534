/**
 * A route inherits what it does not set from its parent, the route of the longest prefix that
 * encloses it: a route added only to deprecate one path keeps its parent's upstream, CORS and
 * cache, over real sockets. `inherit: false` takes the defaults instead.
 */
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const ORIGIN = 'https://app.example.com';
let upstream: RecordingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.setHeader('cache-control', 'public, max-age=60');
      res.end('{"data":[]}');
    });
  });
  gw = await startTestGateway(upstream.url, {
    routes: [
      { prefix: '/v1', upstream: upstream.url, auth: 'none', cache: true, cors: { origins: [ORIGIN] } },
      // Added only to deprecate one path: names neither upstream, cors nor cache.
      { prefix: '/v1/old', deprecation: { at: '2025-06-01' } },
      // Opts out: the defaults (no cache, no CORS), so it names its upstream and auth.
      { prefix: '/v1/private', inherit: false, upstream: upstream.url, auth: 'none' },
    ],
  });
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});
beforeEach(() => {
  upstream.records.length = 0;
});

async function get(path: string) {
  const response = await request(`${gw.origin}${path}`, {
    dispatcher: gw.agent,
    headers: { origin: ORIGIN },
  });
  await response.body.dump();
  return response;
}

describe('route inheritance', () => {
  it("a route added to deprecate one path keeps its parent's upstream, CORS and cache", async () => {
    const first = await get('/v1/old/items');
    expect(first.statusCode).toBe(200);
    expect(first.headers['deprecation']).toBeDefined();
    expect(first.headers['access-control-allow-origin']).toBe(ORIGIN);
    const second = await get('/v1/old/items');
    expect(second.statusCode).toBe(200);
    // The second answer came from the cache.
    expect(upstream.records.map((r) => r.url)).toEqual(['/v1/old/items']);
  });

  it('inherit: false takes the defaults: no CORS, no cache', async () => {
    const first = await get('/v1/private/items');
    expect(first.statusCode).toBe(200);
    expect(first.headers['access-control-allow-origin']).toBeUndefined();
    await get('/v1/private/items');
    expect(upstream.records).toHaveLength(2);
  });
});
