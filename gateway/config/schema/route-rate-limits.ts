/**
 * Per-route limits by reference: a route's `rateLimits` names policies of `scope: route`
 * (rate-limit.ts), which count only the requests of routes that name them. Both sides are
 * checked together: a name that is no policy, a policy of `scope: all` (it counts every request
 * already), and a route policy no route names (it would count nothing).
 */
import type { RateLimitPolicyConfig } from './rate-limit.ts';
import type { RouteDefinitionInput } from './routes.ts';

/** Each problem `path: problem`, on the routes as written. */
export function checkRouteRateLimits(
  routes: readonly RouteDefinitionInput[],
  policies: readonly RateLimitPolicyConfig[],
): string[] {
  const problems: string[] = [];
  const byName = new Map(policies.map((policy) => [policy.name, policy]));
  const named = new Set<string>();
  routes.forEach((route, index) =>
    route.rateLimits?.forEach((name, at) => {
      named.add(name);
      const policy = byName.get(name);
      const where = `routes[${index}].rateLimits[${at}]`;
      if (policy === undefined) problems.push(`${where}: no policy named "${name}" in rateLimits.policies`);
      else if (policy.scope !== 'route')
        problems.push(`${where}: policy "${name}" counts every request already; give it scope: route`);
    }),
  );
  policies.forEach((policy, index) => {
    if (policy.scope === 'route' && !named.has(policy.name))
      problems.push(`rateLimits.policies[${index}].scope: no route names "${policy.name}" in its rateLimits`);
  });
  return problems;
}
