/**
 * `prefix: /` is a catch-all: it takes every path no longer prefix matches, and the longest
 * prefix still wins, over real sockets with one recording upstream per route.
 */
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../gateway/config/load.ts';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let api: RecordingUpstream;
let rest: RecordingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  api = await startRecordingUpstream();
  rest = await startRecordingUpstream();
  gw = await startTestGateway(api.url, {
    routes: [
      { prefix: '/', upstream: rest.url, auth: 'none' },
      { prefix: '/v1', upstream: api.url, auth: 'none' },
    ],
  });
});
afterAll(async () => {
  await gw.close();
  await api.close();
  await rest.close();
});
beforeEach(() => {
  api.records.length = 0;
  rest.records.length = 0;
});

async function get(path: string): Promise<number> {
  const response = await request(`${gw.origin}${path}`, { dispatcher: gw.agent });
  await response.body.dump();
  return response.statusCode;
}

describe('catch-all route', () => {
  it('the schema takes `/` and still refuses a trailing slash or an empty segment', () => {
    const routes = (prefix: string) => ({
      routes: [{ prefix, upstream: 'http://127.0.0.1:1', auth: 'none' }],
    });
    expect(parseConfig(routes('/')).config.routes[0]?.prefix).toBe('/');
    for (const bad of ['//', '/v1/', '', 'v1', '/v1//x']) {
      expect(() => parseConfig(routes(bad)), bad).toThrow(/routes\[0\]\.prefix: must match pattern/);
    }
  });

  it.each([
    ['/v1', 'api'],
    ['/v1/orders/42', 'api'],
    ['/', 'rest'],
    ['/v10', 'rest'],
    ['/v2/orders', 'rest'],
    ['/static/app.js', 'rest'],
  ])('%s goes to the %s upstream (longest prefix wins)', async (path, expected) => {
    expect(await get(path)).toBe(200);
    const [hit, missed] = expected === 'api' ? [api, rest] : [rest, api];
    expect(hit.records.map((r) => r.url)).toEqual([path]);
    expect(missed.records).toEqual([]);
  });

  it('a path not in its canonical spelling is still a 404, catch-all or not', async () => {
    expect(await get('/static//app.js')).toBe(404);
    expect(rest.records).toEqual([]);
  });
});
