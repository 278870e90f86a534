/**
 * Prometheus metrics of one gateway instance. Each instance has its own registry, so two
 * gateways in one process (tests) never share counters.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { createBoundCounter, createBoundHistogram } from './bound-metrics.ts';
import type { StageTimer } from '../pipeline/compose.ts';

export type UpstreamErrorKind = 'refused' | 'reset' | 'timeout' | 'malformed' | 'tls' | 'mismatch';

/** One route's requests since start, as /metrics counts them (the dashboard reads these). */
export interface RouteTotals {
  route: string;
  /** Requests by status code. */
  statuses: Record<string, number>;
  /** Latency histogram: cumulative counts at each upper bound (seconds), then `count` for +Inf. */
  latency: { bounds: number[]; cumulative: number[]; count: number };
}

const REQUESTS = 'portico_http_requests_total';
const DURATION = 'portico_http_request_duration_seconds';

/** The gateway's instruments, named once here. */
export interface GatewayMetrics {
  readonly registry: Registry;
  observeRequest(route: string, method: string, status: number, seconds: number): void;
  upstreamError(upstream: string, kind: UpstreamErrorKind): void;
  connectionOpened(): void;
  connectionClosed(): void;
  /** A timer for compose(): each stage's own time per request into portico_stage_duration_seconds. */
  stageTimer(stageNames: readonly string[]): StageTimer;
  /** Exposes the rate limiter's store state (degraded when Redis fails) as gauges. */
  watchRateLimiter(status: () => { degraded: boolean; storeFailures: number }): void;
  /** Each route's requests by status and its latency histogram since start. */
  routeTotals(): Promise<RouteTotals[]>;
}

export function createMetrics(options: { processMetrics: boolean }): GatewayMetrics {
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'portico_' });
  const requests = createBoundCounter(registry, {
    name: REQUESTS,
    help: 'Requests answered, by route (its name, else its prefix), method and status.',
  });
  const duration = createBoundHistogram(registry, {
    name: DURATION,
    help: 'Time from request received to response finished, by route (its name, else its prefix).',
    // From a cache hit (sub-millisecond) to the upstream response timeout.
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  });
  const upstreamErrors = new Counter({
    name: 'portico_upstream_errors_total',
    help: 'Upstream requests that failed, by upstream origin and kind.',
    labelNames: ['upstream', 'kind'] as const,
    registers: [registry],
  });
  const connections = new Gauge({
    name: 'portico_open_connections',
    help: 'Client connections currently open on the HTTPS listener.',
    registers: [registry],
    // Workers: each holds its own connections; the gateway's are all of them.
    aggregator: 'sum',
  });
  // Bounded: routes come from config, methods from KNOWN_METHODS, statuses are three digits.
  const boundRequests = new Map<string, () => void>();
  const boundDurations = new Map<string, (seconds: number) => void>();
  let stageDuration: ReturnType<typeof createBoundHistogram> | undefined;
  return {
    registry,
    observeRequest(route, method, status, seconds) {
      // Unknown methods would let clients create label values without bound.
      const knownMethod = KNOWN_METHODS.has(method) ? method : 'OTHER';
      const key = `${route} ${knownMethod} ${status}`;
      let count = boundRequests.get(key);
      if (count === undefined) {
        count = requests.bind({ route, method: knownMethod, status: String(status) });
        boundRequests.set(key, count);
      }
      let observe = boundDurations.get(route);
      if (observe === undefined) {
        observe = duration.bind({ route });
        boundDurations.set(route, observe);
      }
      count();
      observe(seconds);
    },
    stageTimer(stageNames) {
      // One histogram for every pipeline a reload builds: a series registered twice is an error.
      stageDuration ??= createBoundHistogram(registry, {
        name: 'portico_stage_duration_seconds',
        help:
          "Each pipeline stage's own time per request, the stages after it excluded: " +
          'waits included (Redis for rate-limit, the upstream for proxy).',
        // From a few microseconds (request-id) to the upstream response timeout (proxy).
        buckets: [
          0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5,
          30,
        ],
      });
      const histogram = stageDuration;
      const byIndex = stageNames.map((stage) => histogram.bind({ stage }));
      return (index, seconds) => byIndex[index]?.(seconds);
    },
    upstreamError(upstream, kind) {
      upstreamErrors.inc({ upstream, kind });
    },
    connectionOpened() {
      connections.inc();
    },
    connectionClosed() {
      connections.dec();
    },
    routeTotals: () => readRouteTotals(registry),
    watchRateLimiter(status) {
      new Gauge({
        name: 'portico_ratelimit_store_degraded',
        help: '1 while the rate-limit store (Redis) is failing and limits fall back per onStoreFailure (under GATEWAY_WORKERS: on any worker).',
        registers: [registry],
        // Workers: each has its own Redis connection; 1 as soon as one of them falls back, as
        // portico_degraded does. A sum would say 2 for one outage seen by two workers.
        aggregator: 'max',
        collect() {
          this.set(status().degraded ? 1 : 0);
        },
      });
      new Gauge({
        name: 'portico_ratelimit_store_failures',
        help: 'Rate-limit store commands that failed since start (under GATEWAY_WORKERS: of all workers).',
        registers: [registry],
        // A count since start, a counter in all but its type (kept a gauge: its name is read by
        // alerts and the bench): each worker counts its own commands, so the fleet's is the sum.
        aggregator: 'sum',
        collect() {
          this.set(status().storeFailures);
        },
      });
    },
  };
}

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Read back from the registry, as a scrape would: the hot path keeps only its plain counters. */
async function readRouteTotals(registry: Registry): Promise<RouteTotals[]> {
  const [requests, durations] = await Promise.all(
    [REQUESTS, DURATION].map(async (name) => (await registry.getSingleMetric(name)?.get())?.values ?? []),
  );
  const byRoute = new Map<string, RouteTotals>();
  const totals = (route: string) => {
    let entry = byRoute.get(route);
    if (entry === undefined) {
      entry = { route, statuses: {}, latency: { bounds: [], cumulative: [], count: 0 } };
      byRoute.set(route, entry);
    }
    return entry;
  };
  for (const { labels, value } of requests ?? []) {
    const { statuses } = totals(String(labels['route']));
    const status = String(labels['status']);
    statuses[status] = (statuses[status] ?? 0) + value;
  }
  for (const value of (durations ?? []) as {
    labels: Record<string, unknown>;
    sharedLabels?: Record<string, unknown>;
    value: number;
    metricName?: string;
  }[]) {
    if (value.metricName !== `${DURATION}_bucket`) continue;
    const { latency } = totals(String(value.sharedLabels?.['route']));
    const le = String(value.labels['le']);
    if (le === '+Inf') latency.count = value.value;
    else {
      latency.bounds.push(Number(le));
      latency.cumulative.push(value.value);
    }
  }
  return [...byRoute.values()];
}
