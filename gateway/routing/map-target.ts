/**
 * The target sent upstream for a route with `stripPrefix` or `rewrite`
 * (config/schema/route-rewrite.ts): its prefix replaced, the rest and the query kept.
 */
import type { PathMap } from '../config/schema/route-rewrite.ts';

/**
 * The target (path and query) with `map.from` replaced by `map.to`. The route stage calls it
 * only for a path under `map.from`, whole segments.
 */
export function mapTarget(map: PathMap, target: string): string {
  const rest = map.from === '/' ? target : target.slice(map.from.length);
  // rest is '' (the prefix itself), '?query', or '/more...'.
  if (map.to === '/') return rest === '' || rest.startsWith('?') ? `/${rest}` : rest;
  return rest === '/' ? map.to : `${map.to}${rest}`;
}
