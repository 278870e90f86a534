/**
 * Maps a path prefix to its upstream. Prefixes match whole segments (`/v1` takes `/v1` and
 * `/v1/orders`, never `/v10`) and the longest one wins; no match, which includes an unknown
 * API version, is a 404 problem.
 */
import { HttpProblem } from '../../shared/errors.ts';
import type { Stage } from '../pipeline/context.ts';
import type { RouteDefinition } from './route-schema.ts';

export function createRouteStage(routes: readonly RouteDefinition[]): Stage {
  const byLength = [...routes].sort((a, b) => b.prefix.length - a.prefix.length);
  return async function route(ctx, next) {
    const match = byLength.find((r) => ctx.path === r.prefix || ctx.path.startsWith(`${r.prefix}/`));
    if (match === undefined) throw new HttpProblem('ERR_ROUTE_NOT_FOUND', `no route serves ${ctx.path}`);
    ctx.route = match;
    await next();
  };
}
