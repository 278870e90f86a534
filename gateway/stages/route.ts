/**
 * Maps a path prefix to its upstream. Prefixes match whole segments (`/v1` takes `/v1` and
 * `/v1/orders`, never `/v10`) and the longest one wins; no match, which includes an unknown
 * API version, is a 404 problem.
 *
 * A path not in its one canonical spelling (shared/canonical-path.ts) is a 404 here, before
 * anything is keyed on it: the rate limits, the cache, the audit and the service then all see
 * the same string for the same resource, and an alias cannot slip past what is keyed on it.
 */
import { canonicalPath, isCanonicalPath } from '../../shared/canonical-path.ts';
import { HttpProblem } from '../../shared/errors.ts';
import type { Stage } from '../pipeline/context.ts';
import type { RouteDefinition } from './route-schema.ts';

export function createRouteStage(routes: readonly RouteDefinition[]): Stage {
  const byLength = [...routes].sort((a, b) => b.prefix.length - a.prefix.length);
  return async function route(ctx, next) {
    if (!isCanonicalPath(ctx.path)) throw notCanonical(ctx.path);
    const match = byLength.find((r) => ctx.path === r.prefix || ctx.path.startsWith(`${r.prefix}/`));
    if (match === undefined) throw new HttpProblem('ERR_ROUTE_NOT_FOUND', `no route serves ${ctx.path}`);
    ctx.route = match;
    await next();
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
