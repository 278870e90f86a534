/**
 * Finds the route of a request (routing/route-table.ts): by path prefix, whole segments (`/v1`
 * takes `/v1` and `/v1/orders`, never `/v10`), the longest winning, then by host, headers and
 * method; `/` takes every path no longer prefix matches. No match, which includes an unknown API
 * version without a catch-all, is a 404 problem; a path whose routes take other methods only,
 * a 405 with `Allow`. A route with `stripPrefix` or `rewrite` has its prefix rewritten in the
 * target sent upstream (`ctx.upstream.target`) only: `ctx.path` and `ctx.target`, which the
 * limits, the cache, the logs and the audit key on, stay the client's.
 *
 * A path not in its one canonical spelling (shared/canonical-path.ts) is a 404 here, before
 * anything is keyed on it: the rate limits, the cache, the audit and the service then all see
 * the same string for the same resource, and an alias cannot slip past what is keyed on it.
 */
import { canonicalPath, isCanonicalPath } from '../../shared/canonical-path.ts';
import { HttpProblem } from '../../shared/errors.ts';
import type { GatewayContext, Stage } from '../pipeline/context.ts';
import type { RateLimitGate } from './rate-limit.ts';
import type { RouteDefinition } from '../config/schema/routes.ts';
import { mapTarget } from '../routing/map-target.ts';
import { RouteTable, routingHost } from '../routing/route-table.ts';

/** `gate` (the rate-limit stage's, from the builder) counts 404s against the anonymous limit. */
export function createRouteStage(routes: readonly RouteDefinition[], gate?: RateLimitGate): Stage {
  const table = new RouteTable(routes);
  // A 404 is counted against the address's anonymous limit first (rateLimits.anonymous).
  const unrouted = async (ctx: GatewayContext, problem: HttpProblem): Promise<never> => {
    throw (await gate?.anonymous(ctx)) ?? problem;
  };
  return function route(ctx, next) {
    if (!isCanonicalPath(ctx.path)) return unrouted(ctx, notCanonical(ctx.path));
    const { path } = ctx;
    const { headers, method = 'GET' } = ctx.req;
    const host = table.usesHosts ? routingHost(ctx.upstream.authority) : '';
    const { route, allow } = table.find(path, method, host, headers);
    if (route === undefined)
      return unrouted(
        ctx,
        allow === undefined
          ? new HttpProblem('ERR_ROUTE_NOT_FOUND', `no route serves ${path}`)
          : new HttpProblem('ERR_METHOD_NOT_ALLOWED', `${path} takes ${allow.join(', ')}`, {
              headers: { allow: allow.join(', ') },
            }),
      );
    ctx.upstream.route = route;
    if (route.pathMap !== undefined) ctx.upstream.target = mapTarget(route.pathMap, ctx.target);
    return next();
  };
}

function notCanonical(path: string): HttpProblem {
  const canonical = canonicalPath(path);
  return new HttpProblem(
    'ERR_ROUTE_NOT_FOUND',
    canonical === undefined
      ? 'no route serves this path: it has no canonical spelling'
      : `no route serves this spelling of ${canonical}: no empty segment or trailing slash, percent-encoding only where a character must be encoded`,
  );
}
