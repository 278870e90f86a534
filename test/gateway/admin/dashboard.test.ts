/**
 * The operators' dashboard on the admin listener, in a real browser (Debian's Chromium through
 * playwright-core): after real traffic through the gateway (cache hits, rate-limit refusals,
 * an unrouted 404) the page shows the routes with their stages, non-zero request counts, the
 * cache and the most-limited caller, draws its charts, asks nothing of any other host, breaks
 * no rule of its Content-Security-Policy, and its screenshot is a rendered page. It lists the
 * rate-limit policies and the API keys (id, owner, state; never a secret), strikes out the
 * stages a route skips (deprecation and cors included), and its chart draws the traffic of
 * the last hour as the gateway sampled it, page open or not, reloaded or not.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { createFileApiKeyStore } from '../../../gateway/identity/api-key-store.ts';
import { launchBrowser, type TestBrowser } from '../../support/browser.ts';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let upstream: RecordingUpstream;
let gw: TestGateway;
let browser: TestBrowser;
const dataDir = mkdtempSync(join(tmpdir(), 'portico-dashboard-'));
/** The chart's sampling interval here, so that a second of traffic makes several points. */
const HISTORY_MS = 200;

beforeAll(async () => {
  const keys = createFileApiKeyStore(dataDir);
  for (const [id, customerId] of [
    ['ak_dashboardkey1', 'cus_alpha'],
    ['ak_dashboardkey2', 'cus_beta'],
  ] as const)
    await keys.add({ id, customerId, scopes: ['orders:read'], createdAt: new Date().toISOString() });
  await keys.revoke('ak_dashboardkey2');
  keys.close();
  upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Cache-Control', 'max-age=600');
    res.end(JSON.stringify({ path: req.url }));
  });
  gw = await startTestGateway(
    upstream.url,
    {
      routes: [
        { prefix: '/v1', upstream: upstream.url, auth: 'none', cache: true },
        {
          prefix: '/status',
          upstream: upstream.url,
          auth: 'none',
          cors: { origins: ['https://app.example.com'] },
        },
        { prefix: '/v1/legacy', deprecation: { at: '2025-06-01' } },
        { prefix: '/private', upstream: upstream.url, auth: 'required' },
      ],
      rateLimits: {
        policies: [{ name: 'tight', key: 'principal', limit: 2, window: '60s', match: { path: '/status' } }],
      },
    },
    { dataDir, dashboardHistoryMs: HISTORY_MS },
  );
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await upstream?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function send(path: string, times: number): Promise<number[]> {
  const statuses = [];
  for (let i = 0; i < times; i++) {
    const response = await request(`${gw.origin}${path}`, { dispatcher: gw.agent });
    await response.body.text();
    statuses.push(response.statusCode);
  }
  return statuses;
}

/** A GET of the admin listener with this Host, as a DNS-rebinding page's request arrives. */
function getWithHost(path: string, host: string): Promise<{ status: number; type?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: gw.gateway.addresses.admin.port, path, headers: { host } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            ...(res.headers['content-type'] ? { type: res.headers['content-type'] } : {}),
            body,
          }),
        );
      },
    );
    req.once('error', reject);
    req.end();
  });
}

/** The rps chart's series as Chart.js holds them: label and points. */
function chartSeries(page: Page): Promise<[string, number[]][]> {
  return page.locator('#rps-chart').evaluate((canvas) => {
    const chart = (globalThis as any).Chart.getChart(canvas);
    return chart.data.datasets.map((d: { label: string; data: number[] }) => [d.label, [...d.data]]);
  });
}

describe('operators dashboard', () => {
  it('is refused to a Host that names another server (DNS rebinding), and served to its own', async () => {
    for (const path of ['/', '/dashboard.json', '/dashboard.js']) {
      const foreign = await getWithHost(path, 'attacker.example:80');
      expect([foreign.status, foreign.type, JSON.parse(foreign.body).code], path).toEqual([
        403,
        'application/problem+json',
        'ERR_FORBIDDEN',
      ]);
      const own = await getWithHost(path, `localhost:${gw.gateway.addresses.admin.port}`);
      expect(own.status, path).toBe(200);
    }
    // Probes and scrapers keep whatever Host they send.
    expect((await getWithHost('/healthz', 'attacker.example')).status).toBe(200);
  });

  it('serves /dashboard.json with the figures the page draws, and no credential', async () => {
    expect(await send('/v1/orders', 5)).toEqual([200, 200, 200, 200, 200]);
    expect(await send('/status', 4)).toEqual([200, 200, 429, 429]);
    expect(await send('/nope', 1)).toEqual([404]);

    const response = await request(`${gw.adminOrigin}/dashboard.json`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    const snapshot = (await response.body.json()) as any;
    const v1 = snapshot.routes.find((r: any) => r.prefix === '/v1');
    expect(v1).toMatchObject({ upstreams: [upstream.url], auth: 'none', cache: true });
    expect(v1.stages.map((s: any) => [s.name, s.active])).toContainEqual(['cache', true]);
    expect(v1.stages.map((s: any) => s.name)).toEqual(
      expect.arrayContaining(['route', 'rate-limit', 'proxy']),
    );
    expect(v1.traffic).toMatchObject({ total: 5, statusMix: { '2xx': 5 } });
    expect(v1.traffic.p50Ms).toBeGreaterThan(0);
    const status = snapshot.routes.find((r: any) => r.prefix === '/status');
    expect(status.traffic.statusMix).toEqual({ '2xx': 2, '4xx': 2 });
    expect(status.stages.find((s: any) => s.name === 'cache').active).toBe(false);
    expect(status.stages.find((s: any) => s.name === 'cors').active).toBe(true);
    expect(v1.stages.find((s: any) => s.name === 'cors').active).toBe(false);
    expect(v1.stages.find((s: any) => s.name === 'deprecation').active).toBe(false);
    expect(status.rateLimits).toEqual(['tight']);
    expect(snapshot.policies).toEqual([
      { name: 'tight', key: 'principal', limit: 2, window: '60s', match: { path: '/status' } },
    ]);
    expect(snapshot.apiKeys).toMatchObject({ enabled: true, total: 2, revoked: 1 });
    expect(snapshot.apiKeys.keys.map((k: any) => Object.keys(k).sort())).toEqual([
      ['createdAt', 'id', 'owner', 'revokedAt', 'scopes'],
      ['createdAt', 'id', 'owner', 'revokedAt', 'scopes'],
    ]);
    expect(snapshot.unrouted).toMatchObject({ total: 1, statusMix: { '4xx': 1 } });
    expect(snapshot.cache).toMatchObject({ hits: 4, misses: 1 });
    expect(snapshot.cache.hitRatio).toBeCloseTo(0.8);
    expect(snapshot.rateLimit).toMatchObject({ backend: 'memory', degraded: false });
    expect(snapshot.rateLimit.mostLimited).toEqual([{ principal: 'ip:127.0.0.1', refused: 2, error: 0 }]);
    expect(snapshot.draining).toBe(false);
    expect(snapshot).toMatchObject({ ready: true, degraded: false });
    expect(snapshot.health).toEqual(
      expect.arrayContaining([
        // An upstream's failure is reported, not NotReady (admin/readiness.ts).
        { name: `upstream ${upstream.url}`, ok: true, required: false, detail: 'reachable' },
        // The recording upstream answers /healthz like any path: 200.
        { name: `${upstream.url}/healthz`, ok: true, detail: 'HTTP 200' },
      ]),
    );
  });

  it('renders routes, traffic, cache and limits in Chromium from this machine only', async () => {
    await send('/v1/orders', 3);
    const { page, requests, errors } = await browser.open(gw.adminOrigin);
    const response = await page.goto(`${gw.adminOrigin}/`);
    expect(response?.status()).toBe(200);
    const csp = response?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe');

    await page.waitForSelector('body[data-rendered]');
    // Traffic between two refreshes: the window's status mix, a rate, a line on the chart.
    await send('/v1/orders', 10);
    expect(await send('/status', 2)).toEqual([429, 429]);
    const first = await page.getAttribute('body', 'data-rendered');
    // Polled from here: the page's CSP refuses the string evaluation waitForFunction would use.
    await expect.poll(() => page.getAttribute('body', 'data-rendered'), { timeout: 10_000 }).not.toBe(first);

    // Struck out: the stages a route skips. /v1 has no deprecation, no cors and no auth.
    const struck = (row: number) =>
      page.locator('#routes tbody tr').nth(row).locator('.stage.off').allInnerTexts();
    expect(await struck(0)).toEqual(['deprecation', 'cors', 'authenticate']);
    expect(await struck(1)).toEqual(['deprecation', 'authenticate', 'cache']);
    expect(await struck(2)).toEqual(['cors', 'authenticate']);
    expect(await struck(3)).toEqual(['deprecation', 'cors', 'cache']);
    const policies = await page.locator('#policies tbody').innerText();
    expect(policies).toContain('tight');
    expect(policies).toContain('/status and below');
    const keys = await page.locator('#api-keys tbody tr').allInnerTexts();
    expect(keys.find((line) => line.startsWith('ak_dashboardkey1\t'))).toMatch(/cus_alpha\t.*\tvalid$/);
    expect(keys.find((line) => line.startsWith('ak_dashboardkey2\t'))).toMatch(/cus_beta\t.*\trevoked/);
    expect(await page.locator('#api-key-count').innerText()).toBe('2 minted, 1 revoked');

    const routes = await page.locator('#routes tbody tr').allInnerTexts();
    const v1 = routes.find((line) => line.startsWith('/v1\t'));
    expect(v1).toContain(upstream.url);
    expect(v1).toContain('cache');
    const requestsCell = Number(
      await page.locator('#routes tbody tr').first().locator('td').nth(4).innerText(),
    );
    expect(requestsCell).toBeGreaterThanOrEqual(18);
    expect(routes.some((line) => line.startsWith('/status\t') && /4xx [1-9]/.test(line))).toBe(true);
    expect(await page.locator('#state').innerText()).toBe('ready');
    expect(await page.locator('#draining').innerText()).toBe('no');
    expect(await page.locator('#cache-ratio').innerText()).toMatch(/% hits$/);
    expect(await page.locator('#limiter-state').innerText()).toBe('memory');
    expect(await page.locator('#limited tbody').innerText()).toContain('ip:127.0.0.1');
    expect(await page.locator('#health tbody').innerText()).toContain('Upstream connection');
    // Chart.js drew on each canvas (a canvas it never drew on has no size from it).
    for (const id of ['rps-chart', 'status-chart', 'cache-chart']) {
      expect(
        await page.locator(`#${id}`).evaluate((canvas) => (canvas as { width: number }).width),
      ).toBeGreaterThan(100);
    }

    const shot = await browser.screenshot(page, 'dashboard');
    expect(shot.bytes).toBeGreaterThan(20_000);
    expect(shot.colours).toBeGreaterThan(20);
    expect(errors).toEqual([]);
    expect(requests.length).toBeGreaterThanOrEqual(5);
    expect(requests.filter((url) => new URL(url).origin !== gw.adminOrigin)).toEqual([]);
    expect(requests).toEqual(expect.arrayContaining([`${gw.adminOrigin}/vendor/chart.umd.min.js`]));
  });

  it('draws the traffic sent while no page was open, and again after a reload', async () => {
    // A second of traffic, no dashboard read: only the gateway's own sampling sees it.
    const ends = Date.now() + 1200;
    while (Date.now() < ends) {
      await send('/v1/orders', 1);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, HISTORY_MS * 2));
    const { page, errors } = await browser.open(gw.adminOrigin);
    await page.goto(`${gw.adminOrigin}/`);
    await page.waitForSelector('body[data-rendered]');
    const busy = (series: [string, number[]][]) =>
      (series.find(([label]) => label === '/v1')?.[1] ?? []).filter((rps) => rps > 0).length;
    // At the first render: a point every 200 ms of that second, not one point per page read.
    const before = busy(await chartSeries(page));
    expect(before).toBeGreaterThanOrEqual(3);
    await page.reload();
    await page.waitForSelector('body[data-rendered]');
    expect(busy(await chartSeries(page))).toBeGreaterThanOrEqual(before);
    expect(await page.locator('#history-span').innerText()).toMatch(/a point every 0.2 s$/);
    expect(errors).toEqual([]);
    await page.context().close();
  });
});
