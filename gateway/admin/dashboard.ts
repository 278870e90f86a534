/**
 * What the operators' dashboard shows, as one JSON document (`/dashboard.json` of the admin
 * listener): routes and their stages, live traffic per route, the rate-limit store and the
 * callers refused most, the cache, the health of what the gateway depends on, and whether it
 * is draining. Everything comes from what the gateway already keeps; nothing here is a secret
 * (no token, key or credential: callers are named by subject, key id or address).
 */
import type { CacheStats } from '../cache/engine/http-cache.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { LimitedCaller } from '../rate-limit/most-limited.ts';
import type { RateLimiterStatus } from '../rate-limit/limiter.ts';
import { routeLabel } from '../config/schema/route-name.ts';
import type { RouteDefinition } from '../config/schema/routes.ts';
import type { ReadinessReport } from './readiness.ts';
import { createTrafficWindow, type RouteTraffic, type TrafficView } from './traffic-window.ts';
import type { ConfigState } from '../observability/config-metrics.ts';

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
  /** The config file version running and the last reload's result (run.ts). */
  configState?: () => ConfigState | undefined;
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
  routes: {
    /** The route's label in metrics and logs: its `name`, else its prefix. */
    name: string;
    prefix: string;
    /** Origins the route forwards to. */
    upstreams: string[];
    auth: RouteDefinition['auth'];
    cache: boolean;
    stages: { name: string; active: boolean }[];
    traffic: RouteTraffic;
  }[];
  /** Answers no route took (404s before routing, refusals at the edge of the pipeline). */
  unrouted: RouteTraffic | null;
  traffic: Pick<TrafficView, 'windowSeconds' | 'history'>;
  rateLimit: RateLimiterStatus & { mostLimited: LimitedCaller[] };
  cache: CacheStats & { hitRatio: number | null };
}

export interface Dashboard {
  snapshot(state: {
    draining: boolean;
    report: Pick<ReadinessReport, 'ready' | 'degraded' | 'checks'>;
    timeoutMs: number;
  }): Promise<DashboardSnapshot>;
}

const MOST_LIMITED_SHOWN = 10;
/** The metrics' label for requests no route matched (observability/request-accounting.ts). */
const UNROUTED = 'none';

export function createDashboard(deps: DashboardDeps): Dashboard {
  const traffic = createTrafficWindow({ read: () => deps.metrics.routeTotals() });
  return {
    async snapshot({ draining, report, timeoutMs }) {
      const [view, upstreamHealth] = await Promise.all([
        traffic.observe(),
        deps.upstreamHealth?.(timeoutMs) ?? Promise.resolve([]),
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
        config: deps.configState?.(),
        // Named fields only: a route key added later is not shown until someone decides it may be.
        routes: deps.routes.map((route) => ({
          name: routeLabel(route),
          prefix: route.prefix,
          upstreams: upstreamOrigins(route),
          auth: route.auth,
          cache: route.cache,
          stages: deps.stageNames.map((name) => ({ name, active: stageRuns(name, route) })),
          traffic: byRoute.get(routeLabel(route)) ?? idle(routeLabel(route)),
        })),
        unrouted: byRoute.get(UNROUTED) ?? null,
        traffic: { windowSeconds: view.windowSeconds, history: view.history },
        rateLimit: { ...deps.limiter.status(), mostLimited: deps.limiter.mostLimited(MOST_LIMITED_SHOWN) },
        cache: { ...stats, hitRatio: looked === 0 ? null : stats.hits / looked },
      };
    },
  };
}

/** The stages a route's settings turn into pass-throughs. */
function stageRuns(name: string, route: RouteDefinition): boolean {
  if (name === 'authenticate') return route.auth === 'required';
  if (name === 'cache') return route.cache;
  return true;
}

/** `upstream`, or each of `upstreams[].url`: as origins (config refuses user info there). */
function upstreamOrigins(route: RouteDefinition): string[] {
  const { upstream, upstreams } = route as { upstream?: string; upstreams?: readonly { url: string }[] };
  const urls = upstream === undefined ? (upstreams ?? []).map((target) => target.url) : [upstream];
  return urls.map((url) => new URL(url).origin);
}

function idle(route: string): RouteTraffic {
  return { route, total: 0, rps: 0, statusMix: {}, p50Ms: null, p99Ms: null };
}
