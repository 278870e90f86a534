/**
 * Readiness that means "can serve" (gateway/admin/readiness.ts): a Redis of the test's own
 * frozen (SIGSTOP: no answer, no FIN, like a blip or a partition) keeps the gateway Ready and
 * serving under `onStoreFailure: memory`, degraded in /readyz, /healthz, /metrics and the
 * dashboard; under `deny` the same outage is NotReady. An upstream down is degraded, not
 * NotReady: the gateway still answers, with 502 problems.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedisClient, waitForRedis } from '../../../shared/redis.ts';
import { startOwnRedis } from '../../support/redis-server.ts';
import { startRecordingUpstream, startTestGateway, type TestGateway } from '../support/harness.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function admin(gw: TestGateway, path: string) {
  const response = await request(`${gw.adminOrigin}${path}`);
  const text = await response.body.text();
  return { status: response.statusCode, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

/** A gateway on a Redis of its own, with one rate-limit policy and `onStoreFailure`. */
async function gatewayOnOwnRedis(onStoreFailure: 'memory' | 'deny') {
  const redisServer = await startOwnRedis();
  cleanups.push(() => redisServer.stop());
  const upstream = await startRecordingUpstream();
  cleanups.push(() => upstream.close());
  const redis = createRedisClient({ url: redisServer.url, keyPrefix: `readiness-${randomUUID()}:` });
  cleanups.push(() => void redis.disconnect());
  // Connected before the gateway starts: a client still connecting is rightly reported
  // degraded (NotReady under deny), and the first /readyz below would race it on a busy machine.
  expect(await waitForRedis(redis, 15_000)).toBe(true);
  const gw = await startTestGateway(
    upstream.url,
    {
      rateLimits: {
        onStoreFailure,
        policies: [{ name: 'per-ip', key: 'ip', limit: 1000, window: '60s' }],
      },
    },
    { redis },
  );
  cleanups.push(() => gw.close());
  // Thawed before the server stops, so that its stop is not waiting on a frozen process.
  cleanups.push(() => void redisServer.thaw());
  return { gw, redisServer };
}

const get = async (gw: TestGateway) => {
  const response = await request(`${gw.origin}/v1/x`, { dispatcher: gw.agent });
  await response.body.text();
  return response.statusCode;
};

describe('/readyz when a dependency the fleet shares fails', () => {
  it('Redis frozen under onStoreFailure memory: still Ready and serving, degraded everywhere an operator looks', async () => {
    const { gw, redisServer } = await gatewayOnOwnRedis('memory');
    expect((await admin(gw, '/readyz')).json()).toMatchObject({ status: 'ready' });

    redisServer.freeze();
    expect(await get(gw)).toBe(200);
    const ready = await admin(gw, '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.json()).toMatchObject({ status: 'degraded' });
    expect(ready.json()['checks']).toContainEqual({
      name: 'redis',
      ok: false,
      required: false,
      detail: expect.stringMatching(/^redis: .*serving degraded: onStoreFailure: memory/),
    });

    const health = await admin(gw, '/healthz');
    expect(health.status).toBe(200);
    expect(health.json()).toEqual({
      status: 'degraded',
      degraded: [{ name: 'redis', detail: expect.stringMatching(/^redis: /) }],
    });

    const metrics = (await admin(gw, '/metrics')).text;
    expect(metrics).toMatch(/^portico_ready 1$/m);
    expect(metrics).toMatch(/^portico_degraded 1$/m);
    expect(metrics).toMatch(/^portico_readiness_check_ok\{check="redis",required="false"\} 0$/m);
    expect(metrics).toMatch(/^portico_ratelimit_store_degraded 1$/m);

    const dashboard = (await admin(gw, '/dashboard.json')).json();
    expect(dashboard).toMatchObject({ ready: true, degraded: true });
    expect(dashboard['health']).toContainEqual(
      expect.objectContaining({ name: 'redis', ok: false, required: false }),
    );

    redisServer.thaw();
    await expect
      .poll(async () => (await admin(gw, '/readyz')).json()['status'], { timeout: 15_000 })
      .toBe('ready');
  });

  it('Redis frozen under onStoreFailure deny: NotReady, since the gateway refuses what it cannot count', async () => {
    const { gw, redisServer } = await gatewayOnOwnRedis('deny');
    expect((await admin(gw, '/readyz')).status).toBe(200);
    redisServer.freeze();
    const ready = await admin(gw, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.json()).toMatchObject({ status: 'not ready' });
    expect(ready.json()['checks']).toContainEqual(
      expect.objectContaining({ name: 'redis', ok: false, required: true }),
    );
    expect((await admin(gw, '/metrics')).text).toMatch(/^portico_ready 0$/m);
  });

  it('an upstream down: Ready and degraded, answering 502 problems', async () => {
    const down = await startRecordingUpstream();
    await down.close();
    const gw = await startTestGateway(down.url);
    cleanups.push(() => gw.close());
    const ready = await admin(gw, '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.json()).toEqual({
      status: 'degraded',
      checks: [{ name: `upstream ${down.url}`, ok: false, required: false, detail: 'ECONNREFUSED' }],
    });
    const response = await request(`${gw.origin}/v1/x`, { dispatcher: gw.agent });
    expect(response.statusCode).toBe(502);
    expect(response.headers['content-type']).toBe('application/problem+json');
    await response.body.text();
    expect((await admin(gw, '/healthz')).json()).toMatchObject({ status: 'degraded' });
  });
});
