/**
 * Each upstream's own health endpoint, for the dashboard (readiness only needs a connection: a
 * service whose database is down still answers, and the gateway still serves its cache). The
 * path is the route's `healthPath`, else its `healthCheck.path`, else `/healthz`, the resource
 * service's, which runs a query (so its answer is PostgreSQL's health too); `healthPath: false`
 * probes nothing, for an upstream that has no such endpoint and would only show red.
 */
import { routeTargets, type RouteDefinition } from '../config/schema/routes.ts';
import type { Upstreams } from '../upstream/pools.ts';
import type { CheckResult } from './dashboard.ts';

const DEFAULT_HEALTH_PATH = '/healthz';

/** Each origin with the paths its routes name, once each. */
export function healthProbes(routes: readonly RouteDefinition[]): { origin: string; path: string }[] {
  const probes = new Map<string, { origin: string; path: string }>();
  for (const route of routes) {
    const path = route.healthPath ?? route.healthCheck?.path ?? DEFAULT_HEALTH_PATH;
    if (path === false) continue;
    for (const target of routeTargets(route)) {
      const origin = new URL(target.url).origin;
      probes.set(`${origin}${path}`, { origin, path });
    }
  }
  return [...probes.values()];
}

export function upstreamHealth(
  upstreams: Upstreams,
  routes: readonly RouteDefinition[],
): (timeoutMs: number) => Promise<CheckResult[]> {
  const probes = healthProbes(routes);
  return (timeoutMs) =>
    Promise.all(
      probes.map(async ({ origin, path }) => {
        const name = `${origin}${path}`;
        try {
          const { statusCode, body } = await upstreams.pool(origin).request({
            path,
            method: 'GET',
            headersTimeout: timeoutMs,
            bodyTimeout: timeoutMs,
            signal: AbortSignal.timeout(timeoutMs),
          });
          await body.dump();
          return { name, ok: statusCode >= 200 && statusCode < 300, detail: `HTTP ${statusCode}` };
        } catch (error) {
          return { name, ok: false, detail: (error as Error).message };
        }
      }),
    );
}
