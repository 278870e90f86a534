/**
 * The cap on what waits for one target: `connectionsPerUpstream` answers in progress plus
 * `circuitBreaker.maxPendingRequests` queued behind them. A full target takes no more; when
 * every target of a route is full, or none is healthy, the route answers an immediate 503 with
 * Retry-After rather than queue without bound (Envoy's circuit breakers, Kong's "no healthy
 * upstream").
 */
import { HttpProblem } from '../../shared/errors.ts';
import type { Member, UpstreamSet } from './upstream-set.ts';

export function isFull(set: UpstreamSet, member: Member): boolean {
  return member.target.outstanding >= set.capacity;
}

/**
 * Why no member could take the request: none in rotation (all failing their health check or
 * ejected; the check's interval says when to look again), or all full.
 */
export function unavailableProblem(set: UpstreamSet, retryAfterSeconds: number): HttpProblem {
  if (set.members.every((member) => member.out)) {
    const interval = set.healthCheck?.intervalMs;
    const seconds = interval === undefined ? retryAfterSeconds : Math.max(1, Math.ceil(interval / 1000));
    return new HttpProblem('ERR_NO_HEALTHY_UPSTREAM', `no target of ${set.route} is healthy`, {
      headers: { 'Retry-After': String(seconds) },
    });
  }
  return new HttpProblem(
    'ERR_UPSTREAM_OVERLOADED',
    `every target of ${set.route} in rotation has as many requests waiting as it may take`,
    { headers: { 'Retry-After': String(retryAfterSeconds) } },
  );
}
