/**
 * Per-stage timing in /metrics: every stage that ran is counted once per request, and a
 * stage's time excludes the stages after it, so a slow upstream shows in the proxy's time and
 * not in the time of the stages before it. With `admin.stageTiming: false` the metric is absent.
 */
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startRecordingUpstream, startTestGateway, type TestGateway } from '../support/harness.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const UPSTREAM_DELAY_MS = 60;
const LIMITS = { rateLimits: { policies: [{ name: 'everyone', key: 'ip', limit: 100, window: '60s' }] } };

async function slowGateway(config: Record<string, unknown>): Promise<TestGateway> {
  const upstream = await startRecordingUpstream((_req, res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end('{"ok":true}');
    }, UPSTREAM_DELAY_MS);
  });
  cleanups.push(() => upstream.close());
  const gateway = await startTestGateway(upstream.url, { ...LIMITS, ...config });
  cleanups.push(() => gateway.close());
  return gateway;
}

async function getTwice(gateway: TestGateway): Promise<void> {
  for (let i = 0; i < 2; i++) {
    const response = await request(`${gateway.origin}/v1/orders`, { dispatcher: gateway.agent });
    await response.body.dump();
    expect(response.statusCode).toBe(200);
  }
}

async function metricsText(gateway: TestGateway): Promise<string> {
  const response = await request(`${gateway.adminOrigin}/metrics`);
  return response.body.text();
}

function stageFigure(text: string, suffix: 'count' | 'sum', stage: string): number {
  const match = new RegExp(
    `^portico_stage_duration_seconds_${suffix}\\{stage="${stage}"\\} (\\S+)$`,
    'm',
  ).exec(text);
  return match === null ? Number.NaN : Number(match[1]);
}

describe('portico_stage_duration_seconds', () => {
  it("counts every stage once per request, and puts the upstream's delay in the proxy's time only", async () => {
    const gateway = await slowGateway({});
    await getTwice(gateway);
    const text = await metricsText(gateway);
    // Routes without auth: no authenticate stage.
    for (const stage of ['request-id', 'hygiene', 'route', 'rate-limit', 'cache', 'proxy'])
      expect(stageFigure(text, 'count', stage), stage).toBe(2);
    expect(text).not.toMatch(/stage="authenticate"/);
    expect(stageFigure(text, 'sum', 'proxy')).toBeGreaterThanOrEqual((2 * UPSTREAM_DELAY_MS * 0.9) / 1000);
    for (const stage of ['request-id', 'hygiene', 'route', 'rate-limit', 'cache'])
      expect(stageFigure(text, 'sum', stage), stage).toBeLessThan(UPSTREAM_DELAY_MS / 1000);
  });

  it('is absent with admin.stageTiming false', async () => {
    const gateway = await slowGateway({ admin: { stageTiming: false } });
    await getTwice(gateway);
    const text = await metricsText(gateway);
    expect(text).toMatch(/^portico_http_requests_total\{/m);
    expect(text).not.toMatch(/portico_stage_duration_seconds/);
  });
});
