/**
 * The dashboard's chart history, kept by the gateway rather than the page: a sample of every
 * route's request totals at a fixed interval (10 s), in a ring of the last hour (360 samples),
 * so that a page opened or reloaded draws the past hour at once instead of starting empty.
 * A sample is one read of counters /metrics keeps anyway: some hundred bytes per route, and
 * a timer that never holds the process open.
 */
import type { RouteTotals } from '../observability/metrics.ts';

export interface HistoryPoint {
  /** Epoch milliseconds of the sample that ends the interval. */
  at: number;
  /** Requests per second per route label over the interval before `at`. */
  rps: Record<string, number>;
}

export interface TrafficHistory {
  /** Oldest first, at most `samples - 1` points (a point is the difference of two samples). */
  points(): HistoryPoint[];
  /** Takes a sample now (the timer's work; tests call it with their own clock). */
  sample(): Promise<void>;
  close(): void;
}

export const HISTORY_INTERVAL_MS = 10_000;
export const HISTORY_SAMPLES = 360;

interface Sample {
  at: number;
  totals: Map<string, number>;
}

export function createTrafficHistory(options: {
  read: () => Promise<RouteTotals[]>;
  intervalMs?: number;
  samples?: number;
  now?: () => number;
  /** false: no timer, samples only when sample() is called (unit tests). */
  timer?: boolean;
}): TrafficHistory {
  const { read, intervalMs = HISTORY_INTERVAL_MS, samples = HISTORY_SAMPLES, now = Date.now } = options;
  const ring: Sample[] = [];
  const history: TrafficHistory = {
    points: () => ring.slice(1).map((sample, i) => point(ring[i] as Sample, sample)),
    async sample() {
      const totals = new Map((await read()).map((route) => [route.route, requestsOf(route)]));
      ring.push({ at: now(), totals });
      if (ring.length > samples) ring.shift();
    },
    close: () => clearInterval(timer),
  };
  const timer =
    options.timer === false
      ? undefined
      : setInterval(() => void history.sample().catch(() => {}), intervalMs).unref();
  // The first sample at once: the first point is then one interval away, not two.
  if (options.timer !== false) void history.sample().catch(() => {});
  return history;
}

const requestsOf = (route: RouteTotals): number =>
  Object.values(route.statuses).reduce((sum, count) => sum + count, 0);

function point(from: Sample, to: Sample): HistoryPoint {
  const seconds = (to.at - from.at) / 1000;
  const rps: Record<string, number> = {};
  for (const [route, total] of to.totals) {
    const added = Math.max(0, total - (from.totals.get(route) ?? 0));
    rps[route] = seconds <= 0 ? 0 : Math.round((added / seconds) * 100) / 100;
  }
  return { at: to.at, rps };
}
