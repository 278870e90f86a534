/**
 * What the dashboard says of each route's configuration: its label, upstreams, the stages it
 * runs and the rate-limit policies that may count its requests. Named fields only: a route key
 * added later is not shown until someone decides it may be.
 *
 * A stage is `active: false` (struck out on the page) when this route skips it: the gateway
 * runs the stage, and the stage passes this route's requests through untouched. Stages the
 * gateway does not run at all are not listed (the pipeline leaves them out).
 */
import type { RateLimitPolicyConfig } from '../config/schema/rate-limit.ts';
import { routeLabel } from '../config/schema/route-name.ts';
import { routeTargets, type RouteDefinition } from '../config/schema/routes.ts';

export interface RouteView {
  /** The route's label in metrics and logs: its `name`, else its prefix. */
  name: string;
  prefix: string;
  /** Origins the route forwards to. */
  upstreams: string[];
  auth: RouteDefinition['auth'];
  cache: boolean;
  stages: { name: string; active: boolean }[];
  /** Names of the policies that may count its requests: `scope: all` ones whose `match.path` meets its prefix, and its own. */
  rateLimits: string[];
}

export function routeView(
  route: RouteDefinition,
  stageNames: readonly string[],
  policies: readonly RateLimitPolicyConfig[],
): RouteView {
  return {
    name: routeLabel(route),
    prefix: route.prefix,
    upstreams: routeTargets(route).map((target) => new URL(target.url).origin),
    auth: route.auth,
    cache: route.cache,
    stages: stageNames.map((name) => ({ name, active: stageRuns(name, route) })),
    rateLimits: policies.filter((policy) => countsRoute(policy, route)).map((policy) => policy.name),
  };
}

/** Whether the stage does anything for this route's requests (docs/operations.md, "Dashboard"). */
export function stageRuns(name: string, route: RouteDefinition): boolean {
  switch (name) {
    case 'authenticate':
      return route.auth === 'required';
    case 'cache':
      return route.cache;
    case 'deprecation':
      return route.deprecation !== undefined;
    case 'cors':
      return route.cors !== undefined;
    default:
      return true;
  }
}

function countsRoute(policy: RateLimitPolicyConfig, route: RouteDefinition): boolean {
  if (policy.scope === 'route') return route.rateLimits?.includes(policy.name) ?? false;
  const path = policy.match?.path;
  return path === undefined || encloses(path, route.prefix) || encloses(route.prefix, path);
}

/** Segment-wise: `/v1` encloses `/v1` and `/v1/orders`, not `/v10`; `/` encloses all. */
function encloses(outer: string, inner: string): boolean {
  const base = outer.endsWith('/') ? outer.slice(0, -1) : outer;
  return base === '' || inner === base || inner.startsWith(`${base}/`);
}
