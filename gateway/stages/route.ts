/**
 * Maps a path prefix to its upstream. Prefixes match whole segments (`/v1` takes `/v1` and
 * `/v1/orders`, never `/v10`) and the longest one wins; `/` takes every path no longer prefix
 * matches. No match, which includes an unknown API version without a catch-all, is a 404
 * problem.
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

/** `gate` (the rate-limit stage's, from the builder) counts 404s against the anonymous limit. */
export function createRouteStage(routes: readonly RouteDefinition[], gate?: RateLimitGate): Stage {
  // Longest first, each with the text a path below it starts with (`/` for the catch-all,
  // whose every path starts so), made once rather than per request.
  const byLength = [...routes]
    .sort((a, b) => b.prefix.length - a.prefix.length)
    .map((route) => ({ route, below: route.prefix === '/' ? '/' : `${route.prefix}/` }));
  // A 404 is counted against the address's anonymous limit first (rateLimits.anonymous).
  const unrouted = async (ctx: GatewayContext, problem: HttpProblem): Promise<never> => {
    throw (await gate?.anonymous(ctx)) ?? problem;
  };
  return function route(ctx, next) {
    if (!isCanonicalPath(ctx.path)) return unrouted(ctx, notCanonical(ctx.path));
    const { path } = ctx;
    const match = byLength.find((r) => path === r.route.prefix || path.startsWith(r.below));
    if (match === undefined)
      return unrouted(ctx, new HttpProblem('ERR_ROUTE_NOT_FOUND', `no route serves ${path}`));
    ctx.upstream.route = match.route;
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
