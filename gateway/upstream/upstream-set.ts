/**
 * A route's targets with the state that decides where its next request goes: per target its
 * weight, whether it is ejected (outlier-ejection.ts) or failing its health check
 * (health-check.ts); per route the requests and retries in flight (retry-budget.ts). Built
 * once per route at start, so the request path only reads fields.
 *
 * The pool and the count of requests awaiting an answer belong to the target itself (pools.ts)
 * and are shared by every route that names it: a busy replica is busy for all of them.
 */
import type { RouteDefinition } from '../config/schema/routes.ts';
import type { ProxyConfig } from '../config/schema/upstream.ts';
import type { Target, Upstreams } from './pools.ts';
import { routeTargets, type HealthCheck } from '../config/schema/routes.ts';
import { routeLabel } from '../config/schema/route-name.ts';

/** One target as one route sees it. */
export interface Member {
  readonly target: Target;
  /** The target's origin, as metrics and logs name it. */
  readonly url: string;
  readonly weight: number;
  /** Smooth weighted round-robin credit (balancer.ts). */
  current: number;
  /** Failures in a row (connection, timeout, 5xx); reset by any other answer. */
  consecutiveFailures: number;
  /** Taken out by outlier ejection or a 503's Retry-After, until its timer returns it. */
  ejected: boolean;
  /** Why it is ejected: `consecutive failures` or `retry-after`. */
  ejectedFor: string;
  /** How many ejections the next one's length is multiplied by (outlier-ejection.ts). */
  ejections: number;
  /** When the last ejection ended: a quiet stretch since then shrinks `ejections`. */
  returnedAt: number;
  ejectionTimer: NodeJS.Timeout | undefined;
  /** False while the route's active health check says it fails. */
  healthy: boolean;
  /** Ejected or unhealthy: the one flag the request path reads. */
  out: boolean;
}

export interface UpstreamSet {
  /** The route's label (its name, else its prefix), as metrics and logs name the route. */
  readonly route: string;
  readonly members: readonly Member[];
  /** The member when there is only one: the request path then skips balancing. */
  readonly single: Member | undefined;
  /** Requests awaiting one target's answer past which it takes no more (circuit-breaker.ts). */
  readonly capacity: number;
  readonly healthCheck: HealthCheck | undefined;
  /** This route's requests awaiting an upstream answer, retries included. */
  active: number;
  /** Of those, the retries. */
  retriesActive: number;
  /** Members ejected right now. */
  ejectedCount: number;
}

/** Recomputes `out` after `ejected` or `healthy` changed. */
export function refreshMember(member: Member): void {
  member.out = member.ejected || !member.healthy;
}

export function createUpstreamSet(
  route: RouteDefinition,
  upstreams: Upstreams,
  proxy: ProxyConfig,
): UpstreamSet {
  const members = routeTargets(route).map((target): Member => ({
    target: upstreams.target(target.url),
    url: upstreams.target(target.url).origin,
    weight: target.weight,
    current: 0,
    consecutiveFailures: 0,
    ejected: false,
    ejectedFor: '',
    ejections: 0,
    returnedAt: 0,
    ejectionTimer: undefined,
    healthy: true,
    out: false,
  }));
  return {
    route: routeLabel(route),
    members,
    single: members.length === 1 ? members[0] : undefined,
    capacity: proxy.connectionsPerUpstream + proxy.circuitBreaker.maxPendingRequests,
    healthCheck: route.healthCheck,
    active: 0,
    retriesActive: 0,
    ejectedCount: 0,
  };
}
