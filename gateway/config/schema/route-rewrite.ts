/**
 * What a route does to the target's path on its way upstream: `stripPrefix` takes the route's
 * prefix off, `rewrite` puts another prefix in its place. Only the upstream request's target
 * changes: the cache keys, the limits, the logs and the audit keep the path the client sent.
 */
import { Type } from '@sinclair/typebox';

/** The prefix a target's path is rewritten from (a route's) and to (`/` for strip). */
export interface PathMap {
  readonly from: string;
  readonly to: string;
}

/** Spread into the route schema's properties. */
export const ROUTE_REWRITE_PROPERTIES = {
  stripPrefix: Type.Optional(
    Type.Boolean({
      description:
        'Take the prefix off the path sent upstream: `/api/orders?x=1` under `/api` goes up as `/orders?x=1`, `/api` as `/`. ' +
        'Not with `rewrite`.',
    }),
  ),
  rewrite: Type.Optional(
    Type.String({
      pattern: '^(/|(/[A-Za-z0-9._~-]+)+)$',
      description:
        "Prefix put in place of the route's on the path sent upstream: with `prefix: /api` and `rewrite: /v1`, " +
        '`/api/orders` goes up as `/v1/orders`. Whole segments, no trailing slash; `/` is `stripPrefix: true`.',
    }),
  ),
};

interface RouteRewriteKeys {
  prefix: string;
  stripPrefix?: boolean;
  rewrite?: string;
}

/** The route's own path map, or undefined when it sets neither key (or `stripPrefix: false` alone). */
export function ownPathMap(route: RouteRewriteKeys): PathMap | undefined {
  if (route.rewrite !== undefined) return { from: route.prefix, to: route.rewrite };
  if (route.stripPrefix === true) return { from: route.prefix, to: '/' };
  return undefined;
}

/** Checks the schema cannot say, for `routes[index]`; each is `path: problem`. */
export function checkRouteRewrite(route: RouteRewriteKeys, at: string): string[] {
  if (route.rewrite !== undefined && route.stripPrefix !== undefined)
    return [`${at}.rewrite: not with stripPrefix (rewrite: / strips the prefix)`];
  return [];
}
