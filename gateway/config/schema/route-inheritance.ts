/**
 * Route inheritance: a route takes every key it does not set from its parent, so that a route
 * added to deprecate one path (or to send one method elsewhere) keeps its parent's upstream,
 * auth, token binding, cache, CORS, limits and path rewrite instead of silently falling back
 * to the defaults.
 *
 * The parent of a route is the route with the longest prefix enclosing its own (whole
 * segments; `/` encloses all) that has no `methods`, `hosts` or `headers`: a route that matches
 * only some requests is nobody's parent. A route with such conditions may have a parent of its
 * very prefix. The parent's keys are its own resolved ones, so keys pass down a chain.
 * `inherit: false` takes the defaults (auth `required`, cache `false`, nothing else) instead.
 * The keys a route matches by (`prefix`, `methods`, `hosts`, `headers`) are never inherited.
 */
import { hasMatchConditions } from './route-match.ts';
import { ownPathMap } from './route-rewrite.ts';
import type { RouteDefinition, RouteDefinitionInput } from './routes.ts';

function encloses(outer: string, inner: string): boolean {
  return outer === '/' || inner === outer || inner.startsWith(`${outer}/`);
}

/** The index of the route's parent in `routes`, or undefined. */
export function parentOf(routes: readonly RouteDefinitionInput[], index: number): number | undefined {
  const route = routes[index] as RouteDefinitionInput;
  const conditional = hasMatchConditions(route);
  let parent: number | undefined;
  routes.forEach((candidate, at) => {
    if (at === index || hasMatchConditions(candidate) || !encloses(candidate.prefix, route.prefix)) return;
    // A route of no conditions takes no parent of its own prefix (that would be a duplicate).
    if (!conditional && candidate.prefix === route.prefix) return;
    if (
      parent === undefined ||
      candidate.prefix.length > (routes[parent] as RouteDefinitionInput).prefix.length
    )
      parent = at;
  });
  return parent;
}

/** The routes as every room sees them, in the same order, parents' keys taken. */
export function resolveRouteInheritance(routes: readonly RouteDefinitionInput[]): RouteDefinition[] {
  const resolved = new Map<number, RouteDefinition>();
  // No cycle: a parent has a shorter prefix, or the same one and no conditions where its child has some.
  const resolve = (index: number): RouteDefinition => {
    const done = resolved.get(index);
    if (done !== undefined) return done;
    const route = routes[index] as RouteDefinitionInput;
    const at = route.inherit === false ? undefined : parentOf(routes, index);
    const parent = at === undefined ? undefined : resolve(at);
    const result = inheritFrom(route, parent);
    resolved.set(index, result);
    return result;
  };
  return routes.map((_route, index) => resolve(index));
}

function inheritFrom(route: RouteDefinitionInput, parent: RouteDefinition | undefined): RouteDefinition {
  const ownsTargets = route.upstream !== undefined || route.upstreams !== undefined;
  const ownsPath = route.stripPrefix !== undefined || route.rewrite !== undefined;
  const result: RouteDefinition = {
    ...route,
    auth: route.auth ?? parent?.auth ?? 'required',
    cache: route.cache ?? parent?.cache ?? false,
  };
  const pathMap = ownsPath ? ownPathMap(route) : parent?.pathMap;
  if (pathMap !== undefined) result.pathMap = pathMap;
  if (parent === undefined) return result;
  if (!ownsTargets) {
    if (parent.upstream !== undefined) result.upstream = parent.upstream;
    if (parent.upstreams !== undefined) result.upstreams = parent.upstreams;
    if (route.healthCheck === undefined && parent.healthCheck !== undefined)
      result.healthCheck = parent.healthCheck;
    if (route.healthPath === undefined && parent.healthPath !== undefined)
      result.healthPath = parent.healthPath;
  }
  if (route.cors === undefined && parent.cors !== undefined) result.cors = parent.cors;
  if (route.rateLimits === undefined && parent.rateLimits !== undefined)
    result.rateLimits = parent.rateLimits;
  if (route.deprecation === undefined && parent.deprecation !== undefined)
    result.deprecation = parent.deprecation;
  if (route.tokenBinding === undefined && parent.tokenBinding !== undefined)
    result.tokenBinding = parent.tokenBinding;
  return result;
}
