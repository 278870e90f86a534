/**
 * GATEWAY_WORKERS=2 and the gauges of `/metrics`: the primary aggregates the workers' registries,
 * each gauge by what it is (docs/operations.md, "Metrics under several workers"). One target in
 * rotation reads 1, not 2; one Redis outage seen by both workers reads 1; the cache hit ratio,
 * which no aggregation of two workers' ratios gives, is left out while the request counters it
 * comes from are summed; open connections and stored entries are the workers' sum.
 *
 * The rate limiter runs on a Redis of the test's own, stopped in the last test, so that both
 * workers see the outage without touching the shared server.
 */
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayProcess } from '../gateway/support/gateway-process.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';
import { onNewConnections } from './support/gateway-workers.ts';
import { freshCustomer, policy, startScaleFixture, type ScaleFixture } from './support/scale-fixture.ts';

let fixture: ScaleFixture;
let redis: OwnRedis;
let gateway: GatewayProcess;
let authorization: string;

beforeAll(async () => {
  fixture = await startScaleFixture();
  redis = await startOwnRedis();
  // Counted in Redis, so that an outage is what both workers see; a limit no test reaches.
  const limits = {
    ...policy('memory'),
    policies: [{ name: 'default', key: 'customer', limit: 1e6, window: '60s' }],
  };
  gateway = await fixture.gateway(limits, { GATEWAY_WORKERS: '2', REDIS_URL: redis.url });
  await gateway.waitForLog('gateway workers listening', 40_000);
  authorization = `Bearer ${await fixture.token(freshCustomer())}`;
}, 60_000);
afterAll(async () => {
  await fixture?.close();
  await redis?.stop();
});

async function metrics(): Promise<string> {
  const response = await request(`http://127.0.0.1:${gateway.adminPort}/metrics`);
  return response.body.text();
}

/** The lines of `name` (with or without labels), as written. */
const lines = (text: string, name: string) =>
  text.split('\n').filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`));

/** The one value of `series` (a name with its labels, as written); fails when absent. */
function value(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  expect(line, `${series} in /metrics`).toBeDefined();
  return Number(line!.slice(series.length + 1));
}

/** Polls /metrics until `ready` holds of it (for up to 10 s); the last text read. */
async function metricsWhen(ready: (text: string) => boolean): Promise<string> {
  const deadline = Date.now() + 10_000;
  let text = await metrics();
  while (!ready(text) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    text = await metrics();
  }
  return text;
}

describe('GATEWAY_WORKERS=2: each gauge aggregated as what it is', () => {
  it('one upstream target in rotation on both workers reads 1, not 2', async () => {
    expect(await onNewConnections(gateway.port, authorization, 10)).toEqual(Array(10).fill(200));
    const rotation = lines(await metrics(), 'portico_upstream_target_in_rotation');
    expect(rotation).toEqual([
      expect.stringMatching(/^portico_upstream_target_in_rotation\{route="\/v1",.*\} 1$/),
    ]);
  });

  it('the cache: the hit ratio left out, its counters and the entries summed over both workers', async () => {
    const path = `/v1/items/${randomUUID()}`;
    // A few first, so that each worker has stored the path before most requests arrive.
    const first = await onNewConnections(gateway.port, authorization, 4, path);
    const rest = await onNewConnections(gateway.port, authorization, 30, path);
    expect([...first, ...rest]).toEqual(Array(34).fill(200));

    const text = await metrics();
    // A sum of the two workers' ratios read up to 2; their average would weigh them alike.
    expect(lines(text, 'portico_cache_hit_ratio')).toEqual([]);
    const hits = value(text, 'portico_cache_requests_total{result="hit"}');
    const misses = value(text, 'portico_cache_requests_total{result="miss"}');
    const revalidated = value(text, 'portico_cache_requests_total{result="revalidated"}');
    // Every cached read of both workers, this test's and the first test's (other paths).
    expect(hits + misses + revalidated).toBe(44);
    // Each worker missed the path once at least and stored it: two copies of it, and two of the
    // first test's /v1/orders.
    expect(misses).toBeGreaterThanOrEqual(2);
    expect(hits).toBeGreaterThan(0);
    expect(value(text, 'portico_cache_entries')).toBe(4);
  });

  it('open connections: the sum of both workers', async () => {
    const agents = Array.from(
      { length: 6 },
      () => new Agent({ connect: { rejectUnauthorized: false, servername: 'localhost' } }),
    );
    try {
      for (const agent of agents) {
        const response = await request(`https://localhost:${gateway.port}/v1/orders`, {
          headers: { authorization },
          dispatcher: agent,
        });
        await response.body.text();
      }
      // Six kept alive, spread over the workers by the listener.
      const text = await metricsWhen((t) => value(t, 'portico_open_connections') === 6);
      expect(value(text, 'portico_open_connections')).toBe(6);
    } finally {
      await Promise.all(agents.map((agent) => agent.close()));
    }
  });

  it('one Redis outage seen by both workers: the store degraded reads 1, not 2', async () => {
    expect(value(await metrics(), 'portico_ratelimit_store_degraded')).toBe(0);
    await redis.stop();
    // portico_degraded follows at the next readiness run (a scrape starts one when stale).
    const text = await metricsWhen(
      (t) => value(t, 'portico_ratelimit_store_degraded') > 0 && value(t, 'portico_degraded') > 0,
    );
    expect(value(text, 'portico_ratelimit_store_degraded')).toBe(1);
    expect(value(text, 'portico_degraded')).toBe(1);
  });
});
