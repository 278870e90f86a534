/**
 * Live traffic for the dashboard, from the counters /metrics already keeps: each read of the
 * dashboard takes a sample of every route's totals (at most one a second, a bounded ring), and
 * rates, status mix and percentiles are differences between samples. Nothing runs between
 * reads. The chart's history over the last hour is traffic-history.ts's, sampled on a timer.
 */
import type { RouteTotals } from '../observability/metrics.ts';

export interface RouteTraffic {
  route: string;
  /** Requests answered since start. */
  total: number;
  /** Requests per second over the last interval between samples (0 on the first read). */
  rps: number;
  /** Requests in the window by status class (`2xx`, `4xx`, ...). */
  statusMix: Record<string, number>;
  /** Latency percentiles in the window, milliseconds, estimated from the histogram buckets. */
  p50Ms: number | null;
  p99Ms: number | null;
}

export interface TrafficView {
  /** Seconds the status mix and percentiles cover; null when they cover everything since start. */
  windowSeconds: number | null;
  routes: RouteTraffic[];
}

interface Sample {
  at: number;
  routes: Map<string, RouteTotals>;
}

export interface TrafficWindow {
  observe(): Promise<TrafficView>;
}

export function createTrafficWindow(options: {
  read: () => Promise<RouteTotals[]>;
  now?: () => number;
  windowMs?: number;
  minSpacingMs?: number;
  maxSamples?: number;
}): TrafficWindow {
  const { read, now = Date.now, windowMs = 60_000, minSpacingMs = 1000, maxSamples = 120 } = options;
  const samples: Sample[] = [];
  return {
    async observe() {
      const current: Sample = { at: now(), routes: new Map((await read()).map((r) => [r.route, r])) };
      const last = samples.at(-1);
      if (last === undefined || current.at - last.at >= minSpacingMs) {
        samples.push(current);
        if (samples.length > maxSamples) samples.shift();
      }
      const previous = [...samples].reverse().find((s) => current.at - s.at >= minSpacingMs);
      // The oldest sample inside the window, else the newest before it (a page polled less
      // often than the window); none on the first read, which then covers everything since start.
      const since =
        samples.find((s) => s !== current && current.at - s.at <= windowMs) ??
        samples.findLast((s) => s !== current);
      return {
        windowSeconds: since === undefined ? null : Math.round((current.at - since.at) / 1000),
        routes: [...current.routes.values()].map((totals) => routeTraffic(totals, current, previous, since)),
      };
    },
  };
}

const totalOf = (totals: RouteTotals | undefined): number =>
  totals === undefined ? 0 : Object.values(totals.statuses).reduce((a, b) => a + b, 0);

function rate(route: string, from: Sample | undefined, to: Sample): number {
  if (from === undefined || to.at === from.at) return 0;
  const requests = totalOf(to.routes.get(route)) - totalOf(from.routes.get(route));
  return Math.max(0, requests) / ((to.at - from.at) / 1000);
}

function routeTraffic(
  totals: RouteTotals,
  current: Sample,
  previous: Sample | undefined,
  since: Sample | undefined,
): RouteTraffic {
  const before = since?.routes.get(totals.route);
  const statusMix: Record<string, number> = {};
  for (const [status, count] of Object.entries(totals.statuses)) {
    const added = count - (before?.statuses[status] ?? 0);
    const group = `${status[0] ?? '?'}xx`;
    if (added > 0) statusMix[group] = (statusMix[group] ?? 0) + added;
  }
  const cumulative = totals.latency.cumulative.map((c, i) => c - (before?.latency.cumulative[i] ?? 0));
  const count = totals.latency.count - (before?.latency.count ?? 0);
  const bounds = totals.latency.bounds;
  return {
    route: totals.route,
    total: totalOf(totals),
    rps: rate(totals.route, previous, current),
    statusMix,
    p50Ms: percentileMs(0.5, bounds, cumulative, count),
    p99Ms: percentileMs(0.99, bounds, cumulative, count),
  };
}

/**
 * Prometheus's histogram_quantile: the bucket holding the rank, interpolated linearly inside
 * it; a rank beyond the last finite bound is reported as that bound.
 */
export function percentileMs(
  q: number,
  bounds: readonly number[],
  cumulative: readonly number[],
  count: number,
): number | null {
  if (count <= 0) return null;
  const rank = q * count;
  let lowerBound = 0;
  let lowerCount = 0;
  for (let i = 0; i < bounds.length; i++) {
    const upper = bounds[i] ?? 0;
    const atUpper = cumulative[i] ?? 0;
    if (atUpper >= rank && atUpper > lowerCount) {
      const seconds = lowerBound + ((upper - lowerBound) * (rank - lowerCount)) / (atUpper - lowerCount);
      return Math.round(seconds * 1e6) / 1e3;
    }
    lowerBound = upper;
    lowerCount = atUpper;
  }
  return Math.round((bounds.at(-1) ?? 0) * 1e6) / 1e3;
}
