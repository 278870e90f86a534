/**
 * Per-route limits by reference, over real sockets: a policy of `scope: route` counts only
 * the requests of routes that name it in `rateLimits` (and their children, which inherit the
 * list); other routes never see it. Its config refusals: route-config.unit.test.ts.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let upstream: RecordingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(upstream.url, {
    routes: [
      { prefix: '/v1', upstream: upstream.url, auth: 'none' },
      { prefix: '/v1/reports', rateLimits: ['reports'] },
      // Takes its parent's list.
      { prefix: '/v1/reports/daily', deprecation: { at: '2025-06-01' } },
    ],
    rateLimits: {
      policies: [
        { name: 'everyone', key: 'ip', limit: 1000, window: '60s' },
        { name: 'reports', scope: 'route', key: 'ip', limit: 2, window: '60s' },
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
  await response.body.dump();
  return { status: response.statusCode, policy: response.headers['ratelimit-policy'] };
}

describe('per-route limits by reference', () => {
  it('a route policy counts the routes that name it, children included, and no other', async () => {
    const first = await get('/v1/reports/monthly');
    expect(first.status).toBe(200);
    expect(first.policy).toBe('"everyone";q=1000;w=60, "reports";q=2;w=60');
    expect((await get('/v1/reports/daily')).status).toBe(200);
    expect((await get('/v1/reports/monthly')).status).toBe(429);
    const other = await get('/v1/orders');
    expect(other.status).toBe(200);
    expect(other.policy).toBe('"everyone";q=1000;w=60');
  });
});
