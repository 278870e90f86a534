/**
 * Every route's set of targets, built once at start with what watches them: outlier ejection
 * for all, and active health checks for routes that ask for them. The request path finds its
 * route's set with one lookup by the route object itself.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { RouteDefinition } from '../config/schema/routes.ts';
import type { ProxyConfig } from '../config/schema/upstream.ts';
import { startHealthChecks, type HealthChecks } from './health-check.ts';
import { createOutlierEjection, type OutlierEjection } from './outlier-ejection.ts';
import type { Upstreams } from './pools.ts';
import { createResilienceMetrics, type ResilienceMetrics } from './resilience-metrics.ts';
import { createUpstreamSet, type UpstreamSet } from './upstream-set.ts';

export interface RouteUpstreams {
  /** The set of the route the route stage matched; throws for a route not in the config. */
  of(route: RouteDefinition): UpstreamSet;
  readonly sets: readonly UpstreamSet[];
  readonly outlier: OutlierEjection;
  readonly metrics: ResilienceMetrics;
  /** Runs a round of every route's health checks now and waits for it. */
  checkNow(): Promise<void>;
  /** Stops the health checks and the ejection timers (before the pools close). */
  close(): void;
}

export function createRouteUpstreams(
  routes: readonly RouteDefinition[],
  upstreams: Upstreams,
  proxy: ProxyConfig,
  /** `metrics`: the gateway's own, when it outlives this set of routes (a reload builds another). */
  deps: { log: Logger; registry: Registry; metrics?: ResilienceMetrics },
): RouteUpstreams {
  const byRoute = new Map<RouteDefinition, UpstreamSet>();
  for (const route of routes) byRoute.set(route, createUpstreamSet(route, upstreams, proxy));
  const sets = [...byRoute.values()];
  const metrics = deps.metrics ?? createResilienceMetrics(deps.registry, () => sets);
  const outlier = createOutlierEjection(proxy.outlierDetection, { log: deps.log, metrics });
  const checks: HealthChecks[] = sets.flatMap((set) =>
    set.healthCheck === undefined
      ? []
      : [startHealthChecks(set, set.healthCheck, { upstreams, log: deps.log, metrics, outlier })],
  );
  return {
    of(route) {
      const set = byRoute.get(route);
      if (set === undefined) throw new Error(`no upstream set for route ${route.prefix}`);
      return set;
    },
    sets,
    outlier,
    metrics,
    async checkNow() {
      await Promise.all(checks.map((check) => check.runOnce()));
    },
    close() {
      for (const check of checks) check.close();
      outlier.close();
    },
  };
}
