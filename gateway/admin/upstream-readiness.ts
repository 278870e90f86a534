/**
 * The upstream part of `/readyz`. A route with one target and no health check: its origin
 * accepts a TCP connection (one check per origin, as before there were several targets). A
 * route with several targets or a health check: ready while at least one target is, since
 * one dead replica of several does not stop the gateway serving the route; with a health
 * check that is its last verdict, without one a TCP connection to each target.
 */
import type { Upstreams } from '../upstream/pools.ts';
import type { RouteUpstreams } from '../upstream/route-upstreams.ts';
import type { UpstreamSet } from '../upstream/upstream-set.ts';
import type { ReadinessCheck } from './server.ts';

export function upstreamReadinessChecks(upstreams: Upstreams, routes: RouteUpstreams): ReadinessCheck[] {
  const plain = routes.sets.filter((set) => set.single !== undefined && set.healthCheck === undefined);
  const origins = [...new Set(plain.map((set) => set.members[0]!.url))];
  return [
    ...origins.map((origin) => ({
      name: `upstream ${origin}`,
      check: (timeoutMs: number) => upstreams.probe(origin, timeoutMs),
    })),
    ...routes.sets
      .filter((set) => !plain.includes(set))
      .map((set) => ({
        name: `route ${set.route}`,
        check: (timeoutMs: number) => routeCheck(upstreams, set, timeoutMs),
      })),
  ];
}

async function routeCheck(upstreams: Upstreams, set: UpstreamSet, timeoutMs: number) {
  const results =
    set.healthCheck === undefined
      ? await Promise.all(set.members.map((member) => upstreams.probe(member.url, timeoutMs)))
      : set.members.map((member) => ({
          ok: member.healthy,
          detail: member.healthy ? 'healthy' : 'unhealthy',
        }));
  const word = set.healthCheck === undefined ? 'reachable' : 'healthy';
  const failing = set.members.flatMap((member, index) =>
    results[index]?.ok === true ? [] : [`${member.url} ${results[index]?.detail ?? ''}`],
  );
  const up = set.members.length - failing.length;
  return {
    ok: up > 0,
    detail: `${up} of ${set.members.length} targets ${word}${failing.length === 0 ? '' : `; ${failing.join(', ')}`}`,
  };
}
