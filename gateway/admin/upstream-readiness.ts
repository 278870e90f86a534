/**
 * The upstream part of `/readyz`. A route with one target and no health check: its origin
 * accepts a TCP connection (one check per origin, as before there were several targets). A
 * route with several targets or a health check: ready while at least one target is, since
 * one dead replica of several does not stop the gateway serving the route; with a health
 * check that is its last verdict, without one a TCP connection to each target.
 *
 * None of them is required (readiness.ts): an upstream is shared by the whole fleet, and a
 * gateway whose upstream is down still answers, with 502/503 problems, its cache and its
 * other routes. Taking every gateway out of rotation at once would answer nothing at all; the
 * failure shows as degraded instead.
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
      check: async (timeoutMs: number) => ({
        ...(await upstreams.probe(origin, timeoutMs)),
        required: false,
      }),
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
    required: false,
    detail: `${up} of ${set.members.length} targets ${word}${failing.length === 0 ? '' : `; ${failing.join(', ')}`}`,
  };
}
