/**
 * The dashboard's arithmetic on its own: the most-limited callers stay bounded in memory and
 * keep the heavy hitters; percentiles interpolate inside histogram buckets as Prometheus does;
 * the traffic window turns cumulative totals into rates and a windowed status mix; the chart's
 * history is a bounded ring of rates; a route's struck stages are the ones it skips; API keys
 * are listed by id and owner, bounded, never with a secret.
 */
import { describe, expect, it } from 'vitest';
import { apiKeysView } from '../../../gateway/admin/dashboard-api-keys.ts';
import { routeView } from '../../../gateway/admin/dashboard-routes.ts';
import { createTrafficHistory } from '../../../gateway/admin/traffic-history.ts';
import { createTrafficWindow, percentileMs } from '../../../gateway/admin/traffic-window.ts';
import { parseConfig } from '../../../gateway/config/load.ts';
import type { RouteTotals } from '../../../gateway/observability/metrics.ts';
import { createMostLimited } from '../../../gateway/rate-limit/most-limited.ts';

describe('most-limited callers', () => {
  it('keeps at most its capacity and the heaviest callers on top', () => {
    const tracker = createMostLimited(16);
    for (let i = 0; i < 200; i++) tracker.record('jwt:heavy', 'cus_1');
    for (let i = 0; i < 100; i++) tracker.record('apikey:key_2', 'cus_2');
    // Each over N/capacity (1300/16) refusals: Space-Saving keeps them, with exact counts here.
    for (let i = 0; i < 1000; i++) tracker.record(`ip:10.0.${i >> 8}.${i & 255}`, undefined);
    const top = tracker.top(100);
    expect(top).toHaveLength(16);
    expect(top.slice(0, 2)).toEqual([
      { principal: 'jwt:heavy', customerId: 'cus_1', refused: 200, error: 0 },
      { principal: 'apikey:key_2', customerId: 'cus_2', refused: 100, error: 0 },
    ]);
    // A newcomer inherits the count it replaced, and says so.
    for (const entry of top.slice(2)) expect(entry.refused).toBe(entry.error + 1);
  });
});

describe('percentiles from histogram buckets', () => {
  const bounds = [0.001, 0.01, 0.1, 1];
  it('interpolates linearly inside the bucket holding the rank', () => {
    // 10 requests under 1 ms, 10 between 1 and 10 ms.
    expect(percentileMs(0.5, bounds, [10, 20, 20, 20], 20)).toBe(1);
    expect(percentileMs(0.75, bounds, [10, 20, 20, 20], 20)).toBe(5.5);
    expect(percentileMs(0.99, bounds, [0, 0, 100, 100], 100)).toBeCloseTo(99.1, 5);
  });
  it('says nothing without requests, and the last bound beyond it', () => {
    expect(percentileMs(0.5, bounds, [0, 0, 0, 0], 0)).toBeNull();
    expect(percentileMs(0.99, bounds, [0, 0, 0, 0], 5)).toBe(1000);
  });
});

describe('traffic window', () => {
  const totals = (ok: number, refused: number): RouteTotals[] => [
    {
      route: '/v1',
      statuses: { '200': ok, '429': refused },
      latency: { bounds: [0.01], cumulative: [ok + refused], count: ok + refused },
    },
  ];
  it('gives rates between samples and the status mix of the window', async () => {
    let now = 0;
    let current = totals(10, 0);
    const window = createTrafficWindow({
      read: () => Promise.resolve(current),
      now: () => now,
      windowMs: 60_000,
    });
    const first = await window.observe();
    expect(first.windowSeconds).toBeNull();
    expect(first.routes[0]).toMatchObject({ total: 10, rps: 0, statusMix: { '2xx': 10 } });

    now = 2000;
    current = totals(30, 4);
    const second = await window.observe();
    expect(second.windowSeconds).toBe(2);
    expect(second.routes[0]).toMatchObject({ total: 34, rps: 12, statusMix: { '2xx': 20, '4xx': 4 } });

    // Past the window, the first sample no longer counts.
    now = 70_000;
    current = totals(31, 4);
    const third = await window.observe();
    expect(third.windowSeconds).toBe(68);
    expect(third.routes[0]?.statusMix).toEqual({ '2xx': 1 });
  });
});

describe('chart history', () => {
  const totals = (route: string, ok: number): RouteTotals => ({
    route,
    statuses: { '200': ok },
    latency: { bounds: [0.01], cumulative: [ok], count: ok },
  });
  it('is a ring of the last samples, each point the rate since the one before', async () => {
    let now = 0;
    let current = [totals('/v1', 0)];
    const history = createTrafficHistory({
      read: () => Promise.resolve(current),
      now: () => now,
      samples: 3,
      timer: false,
    });
    await history.sample();
    expect(history.points()).toEqual([]);
    for (const [at, v1, named] of [
      [10_000, 50, 0],
      [20_000, 150, 20],
      [30_000, 160, 20],
    ] as const) {
      now = at;
      current = [totals('/v1', v1), totals('orders-write', named)];
      await history.sample();
    }
    // Three samples kept: the first (at 0) fell out, so two points.
    expect(history.points()).toEqual([
      { at: 20_000, rps: { '/v1': 10, 'orders-write': 2 } },
      { at: 30_000, rps: { '/v1': 1, 'orders-write': 0 } },
    ]);
  });
});

describe('a route on the dashboard', () => {
  const UP = 'http://127.0.0.1:1';
  const STAGES = ['route', 'deprecation', 'cors', 'authenticate', 'rate-limit', 'cache', 'proxy'];
  const { config } = parseConfig({
    routes: [
      { prefix: '/v1', upstream: UP, auth: 'none', cache: true, cors: { origins: ['https://a.example'] } },
      { prefix: '/v1/old', deprecation: { at: '2025-06-01' }, rateLimits: ['reports'] },
      { prefix: '/plain', upstream: UP, name: 'plain' },
    ],
    rateLimits: {
      policies: [
        { name: 'default', limit: 600, window: '60s' },
        { name: 'v1-writes', limit: 10, window: '60s', match: { path: '/v1', methods: ['POST'] } },
        { name: 'reports', scope: 'route', limit: 5, window: '60s' },
      ],
    },
  });
  const view = (index: number) => routeView(config.routes[index]!, STAGES, config.rateLimits.policies);
  const struck = (index: number) =>
    view(index)
      .stages.filter((stage) => !stage.active)
      .map((stage) => stage.name);

  it('strikes out the stages it skips: deprecation and cors without those keys, as auth and cache', () => {
    expect(struck(0)).toEqual(['deprecation', 'authenticate']);
    // Its parent's cors and cache, its own deprecation.
    expect(struck(1)).toEqual(['authenticate']);
    expect(struck(2)).toEqual(['deprecation', 'cors', 'cache']);
  });

  it('lists the policies that may count it: scope all that meet its prefix, and its own', () => {
    expect(view(0).rateLimits).toEqual(['default', 'v1-writes']);
    expect(view(1).rateLimits).toEqual(['default', 'v1-writes', 'reports']);
    expect(view(2)).toMatchObject({ name: 'plain', prefix: '/plain', rateLimits: ['default'] });
  });
});

describe('API keys on the dashboard', () => {
  it('lists the newest first by id and owner, bounded, with totals; off and failing are said', async () => {
    const records = Array.from({ length: 60 }, (_, i) => ({
      id: `ak_${String(i).padStart(3, '0')}`,
      customerId: `cus_${i}`,
      scopes: ['orders:read'],
      createdAt: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
      ...(i % 2 === 0 ? { revokedAt: '2026-02-01T00:00:00.000Z' } : {}),
      // What a careless store might carry: never passed on.
      secret: 'sk_should_not_show',
    }));
    const view = await apiKeysView(() => Promise.resolve(records));
    expect(view).toMatchObject({ enabled: true, total: 60, revoked: 30 });
    const keys = 'keys' in view ? view.keys : [];
    expect(keys).toHaveLength(50);
    expect(keys[0]).toEqual({
      id: 'ak_059',
      owner: 'cus_59',
      scopes: ['orders:read'],
      createdAt: '2026-01-01T00:59:00.000Z',
      revokedAt: null,
    });
    expect(JSON.stringify(view)).not.toContain('sk_should_not_show');
    expect(await apiKeysView(undefined)).toEqual({ enabled: false });
    expect(await apiKeysView(() => undefined)).toEqual({ enabled: false });
    expect(await apiKeysView(() => Promise.reject(new Error('redis down')))).toEqual({
      enabled: true,
      error: 'redis down',
    });
  });
});
