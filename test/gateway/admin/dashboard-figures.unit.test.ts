/**
 * The dashboard's arithmetic on its own: the most-limited callers stay bounded in memory and
 * keep the heavy hitters; percentiles interpolate inside histogram buckets as Prometheus does;
 * the traffic window turns cumulative totals into rates and a windowed status mix.
 */
import { describe, expect, it } from 'vitest';
import { createTrafficWindow, percentileMs } from '../../../gateway/admin/traffic-window.ts';
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
    expect(second.history).toEqual([{ at: 2000, rps: { '/v1': 12 } }]);

    // Past the window, the first sample no longer counts.
    now = 70_000;
    current = totals(31, 4);
    const third = await window.observe();
    expect(third.windowSeconds).toBe(68);
    expect(third.routes[0]?.statusMix).toEqual({ '2xx': 1 });
  });
});
