/**
 * The RateLimit fields as draft-ietf-httpapi-ratelimit-headers-11 has them (issue 35):
 * - the upstream's own `RateLimit-Policy` / `RateLimit` are kept, the gateway's members after
 *   them (an intermediary SHOULD NOT remove them); they were replaced;
 * - an answer from the cache with `Age` > 0 carries no freshly computed `RateLimit` (a client
 *   following the draft discards the fields of such an answer); the policy, which does not
 *   age, stays;
 * - the 429 problem names the exceeded policies in the draft's `violated-policies` member.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  sleep,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let upstream: RecordingUpstream;
let gw: TestGateway;
beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.includes('own-limits') === true) {
        res.setHeader('RateLimit-Policy', '"service";q=10;w=1');
        res.setHeader('RateLimit', '"service";r=9;t=1');
      }
      if (req.url?.includes('cached') === true) res.setHeader('Cache-Control', 'public, max-age=60');
      res.setHeader('Content-Type', 'application/json');
      res.end('{}');
    });
  });
  gw = await startTestGateway(upstream.url, {
    routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none', cache: true }],
    rateLimits: {
      policies: [
        { name: 'everyone', key: 'ip', limit: 100, window: '60s' },
        { name: 'tight', key: 'ip', limit: 1, window: '60s', match: { path: '/v1/tight' } },
      ],
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

async function get(path: string) {
  const response = await request(`${gw.origin}${path}`, { dispatcher: gw.agent });
  const body = await response.body.text();
  return { status: response.statusCode, headers: response.headers, body };
}

describe('RateLimit fields', () => {
  it("the upstream's own fields are kept, the gateway's members appended", async () => {
    const answer = await get('/v1/own-limits');
    expect(answer.status).toBe(200);
    expect(answer.headers['ratelimit-policy']).toBe('"service";q=10;w=1, "everyone";q=100;w=60');
    expect(answer.headers['ratelimit']).toMatch(/^"service";r=9;t=1, "everyone";r=\d+;t=\d+$/);
  });

  it('an answer from the cache with Age > 0: no freshly computed RateLimit, the policy stays', async () => {
    const first = await get('/v1/cached');
    expect(first.headers['ratelimit']).toMatch(/^"everyone";r=\d+;t=\d+$/);
    await sleep(1100);
    const hit = await get('/v1/cached');
    expect(Number(hit.headers['age'])).toBeGreaterThan(0);
    expect(hit.headers['ratelimit']).toBeUndefined();
    expect(hit.headers['ratelimit-policy']).toBe('"everyone";q=100;w=60');
  });

  it('the 429 names the exceeded policies in violated-policies', async () => {
    expect((await get('/v1/tight')).status).toBe(200);
    const refused = await get('/v1/tight');
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toMatchObject({
      code: 'ERR_RATE_LIMITED',
      'violated-policies': ['tight'],
    });
  });
});
