/**
 * Retries within a budget, against real upstream processes: when every target fails, the
 * budget caps the retries (Envoy-style) where an unbounded policy doubles the load; a 503 with
 * Retry-After is retried on another target and keeps the one that sent it out meanwhile.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { sleep, startTestGateway, type TestGateway } from '../support/harness.ts';
import { startReplica, type Replica, type ReplicaOptions } from '../support/replica-process.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function replica(options: ReplicaOptions): Promise<Replica> {
  const started = await startReplica(options);
  cleanups.push(() => started.kill());
  return started;
}

async function gatewayFor(
  upstreams: { url: string }[],
  proxy: Record<string, unknown>,
  route: Record<string, unknown> = {},
) {
  const gw = await startTestGateway('http://unused.invalid', {
    routes: [{ prefix: '/v1', upstreams, auth: 'none', ...route }],
    rateLimits: { policies: [] },
    proxy,
  });
  cleanups.push(() => gw.close());
  return gw;
}

async function get(gw: TestGateway) {
  const response = await request(`${gw.origin}/v1/x`, { dispatcher: gw.agent });
  return { status: response.statusCode, body: await response.body.text() };
}

async function received(replicas: Replica[]): Promise<number> {
  const counts = await Promise.all(replicas.map((r) => r.counts()));
  return counts.reduce((sum, count) => sum + (count['GET'] ?? 0), 0);
}

/** 50 GETs at once to a route whose two targets cut every request after 150 ms. */
async function burstAgainstFailingTargets(retryBudget: Record<string, number>) {
  const targets = [
    await replica({ name: 'a', mode: 'reset', delayMs: 150 }),
    await replica({ name: 'b', mode: 'reset', delayMs: 150 }),
  ];
  const gw = await gatewayFor(
    targets.map((target) => ({ url: target.url })),
    // No ejection: the budget alone is under test.
    { retries: 1, retryBudget, outlierDetection: { maxEjectionPercent: 0 } },
  );
  const answers = await Promise.all(Array.from({ length: 50 }, () => get(gw)));
  return { gw, answers, upstreamRequests: await received(targets) };
}

describe('retry budget', () => {
  it('caps retries at 20 % of the requests in flight when the upstream fails everything', async () => {
    const { gw, answers, upstreamRequests } = await burstAgainstFailingTargets({
      percent: 20,
      minRetryConcurrency: 0,
    });
    expect(answers.every((answer) => answer.status === 502)).toBe(true);
    // 50 first attempts; retries at most a fifth of the 50 in flight.
    expect(upstreamRequests).toBeGreaterThanOrEqual(50);
    expect(upstreamRequests).toBeLessThanOrEqual(60);
    const metrics = await gw.gateway.metrics.registry.metrics();
    const exhausted = /portico_upstream_retry_budget_exhausted_total\{route="\/v1"\} (\d+)/.exec(metrics);
    expect(Number(exhausted?.[1])).toBeGreaterThanOrEqual(40);
    expect(gw.logs.some((line) => line['msg'] === 'retry budget exhausted: not retrying')).toBe(true);
  });

  it('without the cap (100 %) the same failure doubles the load: what the budget prevents', async () => {
    const { answers, upstreamRequests } = await burstAgainstFailingTargets({
      percent: 100,
      minRetryConcurrency: 0,
    });
    expect(answers.every((answer) => answer.status === 502)).toBe(true);
    // Every one of the 50 retried once (seen once at 102: an extra attempt the test does not explain).
    expect(upstreamRequests).toBeGreaterThanOrEqual(100);
  });
});

describe('503 with Retry-After', () => {
  it('retries on the other target and sends nothing more to the one that asked to wait', async () => {
    const busy = await replica({ name: 'busy', mode: '503', retryAfter: '30' });
    const ok = await replica({ name: 'ok' });
    // Its /healthz passes all along: a passing check must not cut the wait it asked for short.
    const healthCheck = { intervalMs: 100, timeoutMs: 90, healthyAfter: 1 };
    const gw = await gatewayFor([{ url: busy.url }, { url: ok.url }], {}, { healthCheck });
    const answers = [];
    for (let i = 0; i < 10; i++) {
      answers.push(await get(gw));
      await sleep(50);
    }
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    expect(await busy.counts()).toEqual({ GET: 1 });
    expect(await ok.counts()).toEqual({ GET: 10 });
    const metrics = await gw.gateway.metrics.registry.metrics();
    expect(metrics).toContain(
      `portico_upstream_ejections_total{route="/v1",upstream="${busy.url}",reason="retry-after"} 1`,
    );
    expect(metrics).toContain('portico_upstream_retries_total{route="/v1",reason="503"} 1');
  });

  it('relays the 503 and its Retry-After when there is no other target', async () => {
    const busy = await replica({ name: 'busy', mode: '503', retryAfter: '7' });
    const gw = await gatewayFor([{ url: busy.url }], {});
    for (let i = 0; i < 3; i++) {
      const response = await request(`${gw.origin}/v1/x`, { dispatcher: gw.agent });
      expect(response.statusCode).toBe(503);
      expect(response.headers['retry-after']).toBe('7');
      expect(await response.body.text()).toBe('busy');
    }
    // One target is never held back: each request reached it, none was retried.
    expect(await busy.counts()).toEqual({ GET: 3 });
  });
});
