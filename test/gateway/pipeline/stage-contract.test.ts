/**
 * The stage contract from the client's side: a refusal by a later stage, the proxy's own 502
 * and a bug in a stage all come back through the response side of every earlier stage, so
 * they carry the request id and the rate-limit headers like any upstream answer.
 */
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpProblem } from '../../../shared/errors.ts';
import type { Stage } from '../../../gateway/pipeline/context.ts';
import { startRecordingUpstream, startTestGateway, type TestGateway } from '../support/harness.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const LIMITS = { rateLimits: { policies: [{ name: 'everyone', key: 'ip', limit: 100, window: '60s' }] } };

async function gatewayWith(upstream: string, cache?: Stage): Promise<TestGateway> {
  const gateway = await startTestGateway(
    upstream,
    LIMITS,
    {},
    undefined,
    cache === undefined ? {} : { stages: { cache } },
  );
  cleanups.push(() => gateway.close());
  return gateway;
}

async function get(gateway: TestGateway, path = '/v1/orders') {
  const response = await request(`${gateway.origin}${path}`, {
    dispatcher: gateway.agent,
    headers: { 'x-request-id': 'contract-1' },
  });
  return {
    status: response.statusCode,
    headers: response.headers,
    body: (await response.body.json()) as Record<string, unknown>,
  };
}

function expectEarlierStagesRan(answer: Awaited<ReturnType<typeof get>>): void {
  // request-id (first stage) and rate-limit (before the cache) both ran on the way back.
  expect(answer.headers['x-request-id']).toBe('contract-1');
  expect(answer.headers['ratelimit-policy']).toBe('"everyone";q=100;w=60');
  expect(answer.headers['ratelimit']).toMatch(/^"everyone";r=99;t=\d+$/);
  expect(answer.headers['content-type']).toBe('application/problem+json');
  expect(answer.headers['cache-control']).toBe('no-store');
}

describe('a refusal goes back through the earlier stages', () => {
  it('a later stage refusing with a problem', async () => {
    const upstream = await startRecordingUpstream();
    cleanups.push(() => upstream.close());
    const refuse: Stage = () =>
      Promise.reject(
        new HttpProblem('ERR_GATEWAY_TIMEOUT', 'refused by a later stage', {
          headers: { 'Retry-After': '7' },
        }),
      );
    const answer = await get(await gatewayWith(upstream.url, refuse));
    expect(answer.status).toBe(504);
    expect(answer.body).toMatchObject({
      status: 504,
      detail: 'refused by a later stage',
      instance: '/v1/orders',
    });
    expect(answer.headers['retry-after']).toBe('7');
    expectEarlierStagesRan(answer);
    expect(upstream.records).toHaveLength(0);
  });

  it("the proxy's 502 when the upstream refuses the connection", async () => {
    const upstream = await startRecordingUpstream();
    const closedUrl = upstream.url;
    await upstream.close();
    const answer = await get(await gatewayWith(closedUrl));
    expect(answer.status).toBe(502);
    expect(answer.body).toMatchObject({ code: 'ERR_BAD_GATEWAY' });
    expectEarlierStagesRan(answer);
  });

  it('a bug in a stage is a 500 problem, logged, and the gateway goes on serving', async () => {
    const upstream = await startRecordingUpstream();
    cleanups.push(() => upstream.close());
    let calls = 0;
    const flaky: Stage = async (_ctx, next) => {
      if (++calls === 1) throw new TypeError('a stage bug');
      await next();
    };
    const gateway = await gatewayWith(upstream.url, flaky);
    const answer = await get(gateway);
    expect(answer.status).toBe(500);
    expect(answer.body).toMatchObject({ code: 'ERR_INTERNAL' });
    expectEarlierStagesRan(answer);
    expect(gateway.logs.some((line) => line['msg'] === 'unexpected error' && line['stage'] === 'cache')).toBe(
      true,
    );
    const next = await get(gateway);
    expect(next.status).toBe(200);
    expect(next.headers['x-request-id']).toBe('contract-1');
  });
});
