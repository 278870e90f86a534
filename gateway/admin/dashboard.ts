/**
 * What the operators' dashboard shows, as one JSON document (`/dashboard.json` of the admin
 * listener): routes with their stages and limits, live traffic per route and its last hour, the
 * rate-limit policies, store and the callers refused most, the API keys, the cache, the health
 * of what the gateway depends on, and whether it is draining. Everything comes from what the
 * gateway already keeps; nothing here is a secret (no token, key or credential: callers are
 * named by subject, key id or address, API keys by id and owner).
 */
import type { CacheStats } from '../cache/engine/http-cache.ts';
import type { RateLimitPolicyConfig } from '../config/schema/rate-limit.ts';
import { routeLabel } from '../config/schema/route-name.ts';
import type { RouteDefinition } from '../config/schema/routes.ts';
import type { ApiKeyRecord } from '../identity/api-key-store.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { ConfigState, ConfigStateSource } from '../observability/config-metrics.ts';
import type { LimitedCaller } from '../rate-limit/most-limited.ts';
import type { RateLimiterStatus } from '../rate-limit/limiter.ts';
import { apiKeysView, type ApiKeysView } from './dashboard-api-keys.ts';
import { routeView, type RouteView } from './dashboard-routes.ts';
import type { ReadinessReport } from './readiness.ts';
import { createTrafficHistory, HISTORY_INTERVAL_MS, type HistoryPoint } from './traffic-history.ts';
import { createTrafficWindow, type RouteTraffic, type TrafficView } from './traffic-window.ts';

export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  /** A readiness check whose failure makes the gateway NotReady (readiness.ts); else reported only. */
  required?: boolean;
}

export interface DashboardDeps {
  routes: readonly RouteDefinition[];
  /** The pipeline's stages in order, as compose() runs them. */
  stageNames: readonly string[];
  metrics: Pick<GatewayMetrics, 'routeTotals'>;
  limiter: { status(): RateLimiterStatus; mostLimited(count: number): LimitedCaller[] };
  cache: { stats(): CacheStats };
  /** Health beyond readiness: each upstream's own `/healthz` (the service's checks PostgreSQL). */
  upstreamHealth?: (timeoutMs: number) => Promise<CheckResult[]>;
  /** The config file version running and the last reload's result, each worker's (run.ts). */
  configState?: ConfigStateSource;
  /** The named policies of `rateLimits.policies`. */
  rateLimitPolicies: readonly RateLimitPolicyConfig[];
  /** The API keys' records; absent, or undefined from the call, when API keys are off. */
  apiKeys?: () => Promise<ApiKeyRecord[]> | undefined;
  /** The chart history's sampling interval (traffic-history.ts); tests shorten it. */
  historyIntervalMs?: number;
}

export interface DashboardSnapshot {
  generatedAt: string;
  draining: boolean;
  ready: boolean;
  /** Ready, with a dependency failing that does not stop it serving (readiness.ts). */
  degraded: boolean;
  health: CheckResult[];
  /** Absent for a gateway started without run.ts (tests). */
  config?: ConfigState | undefined;
  routes: (RouteView & { traffic: RouteTraffic })[];
  /** Answers no route took (404s before routing, refusals at the edge of the pipeline). */
  unrouted: RouteTraffic | null;
  traffic: Pick<TrafficView, 'windowSeconds'> & {
    /** Requests per second per route label, a point per interval, the last hour (traffic-history.ts). */
    history: HistoryPoint[];
    historyIntervalSeconds: number;
  };
  /** `rateLimits.policies` as configured: what counts, how many per window, which requests. */
  policies: RateLimitPolicyConfig[];
  apiKeys: ApiKeysView;
  rateLimit: RateLimiterStatus & { mostLimited: LimitedCaller[] };
  cache: CacheStats & { hitRatio: number | null };
}

export interface Dashboard {
  snapshot(state: {
    draining: boolean;
    report: Pick<ReadinessReport, 'ready' | 'degraded' | 'checks'>;
    timeoutMs: number;
  }): Promise<DashboardSnapshot>;
  /** Stops the history's timer. */
  close(): void;
}

const MOST_LIMITED_SHOWN = 10;
/** The metrics' label for requests no route matched (observability/request-accounting.ts). */
const UNROUTED = 'none';

export function createDashboard(deps: DashboardDeps): Dashboard {
  const read = () => deps.metrics.routeTotals();
  const traffic = createTrafficWindow({ read });
  const intervalMs = deps.historyIntervalMs ?? HISTORY_INTERVAL_MS;
  const history = createTrafficHistory({ read, intervalMs });
  return {
    async snapshot({ draining, report, timeoutMs }) {
      const [view, upstreamHealth, apiKeys, config] = await Promise.all([
        traffic.observe(),
        deps.upstreamHealth?.(timeoutMs) ?? Promise.resolve([]),
        apiKeysView(deps.apiKeys),
        deps.configState?.(),
      ]);
      const byRoute = new Map(view.routes.map((r) => [r.route, r]));
      const stats = deps.cache.stats();
      const looked = stats.hits + stats.revalidated + stats.misses;
      return {
        generatedAt: new Date().toISOString(),
        draining,
        ready: !draining && report.ready,
        degraded: !draining && report.degraded,
        health: [...report.checks, ...upstreamHealth],
        config,
        routes: deps.routes.map((route) => ({
          ...routeView(route, deps.stageNames, deps.rateLimitPolicies),
          traffic: byRoute.get(routeLabel(route)) ?? idle(routeLabel(route)),
        })),
        unrouted: byRoute.get(UNROUTED) ?? null,
        traffic: {
          windowSeconds: view.windowSeconds,
          history: history.points(),
          historyIntervalSeconds: intervalMs / 1000,
        },
        policies: deps.rateLimitPolicies.map((policy) => ({ ...policy })),
        apiKeys,
        rateLimit: { ...deps.limiter.status(), mostLimited: deps.limiter.mostLimited(MOST_LIMITED_SHOWN) },
        cache: { ...stats, hitRatio: looked === 0 ? null : stats.hits / looked },
      };
    },
    close: () => history.close(),
  };
}

function idle(route: string): RouteTraffic {
  return { route, total: 0, rps: 0, statusMix: {}, p50Ms: null, p99Ms: null };
}
