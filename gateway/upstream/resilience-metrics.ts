/**
 * The upstream resilience instruments: retries (and those the budget refused), ejections, the
 * 503s answered with no target to send to, and each target's place in its route's rotation.
 * Label values come from the config (route names and prefixes, target origins) and fixed reasons, so
 * their number is bounded.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { UpstreamSet } from './upstream-set.ts';

export interface ResilienceMetrics {
  retried(route: string, reason: string): void;
  retryBudgetExhausted(route: string): void;
  ejected(route: string, upstream: string, reason: string): void;
  unavailable(route: string, code: string): void;
  healthCheck(route: string, upstream: string, ok: boolean): void;
}

export function createResilienceMetrics(
  registry: Registry,
  sets: () => Iterable<UpstreamSet>,
): ResilienceMetrics {
  const retries = new Counter({
    name: 'portico_upstream_retries_total',
    help: 'Requests sent again after a failed attempt, by route and what failed (an error kind, or 503).',
    labelNames: ['route', 'reason'] as const,
    registers: [registry],
  });
  const budget = new Counter({
    name: 'portico_upstream_retry_budget_exhausted_total',
    help: 'Failed attempts that would have been retried but for the retry budget, by route.',
    labelNames: ['route'] as const,
    registers: [registry],
  });
  const ejections = new Counter({
    name: 'portico_upstream_ejections_total',
    help: 'Targets taken out of a route: consecutive failures, or a 503 with Retry-After.',
    labelNames: ['route', 'upstream', 'reason'] as const,
    registers: [registry],
  });
  const unavailable = new Counter({
    name: 'portico_upstream_unavailable_total',
    help: 'Requests answered 503 at once because no target could take them, by route and problem code.',
    labelNames: ['route', 'code'] as const,
    registers: [registry],
  });
  const checks = new Counter({
    name: 'portico_upstream_health_checks_total',
    help: 'Active health checks, by route, target and result.',
    labelNames: ['route', 'upstream', 'result'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'portico_upstream_target_in_rotation',
    help: '1 while a target takes requests of its route, 0 while it is ejected or fails its health check (under GATEWAY_WORKERS: by any worker).',
    labelNames: ['route', 'upstream'] as const,
    registers: [registry],
    // Workers: each ejects and health-checks on its own. 1 only while every worker sends to the
    // target: a target one worker took out is failing, and an alert on 0 should see it (a sum
    // said 2 for one target; max would hide it until every worker had ejected it).
    aggregator: 'min',
    collect() {
      this.reset();
      for (const set of sets())
        for (const member of set.members)
          this.set({ route: set.route, upstream: member.url }, member.out ? 0 : 1);
    },
  });
  return {
    retried: (route, reason) => retries.inc({ route, reason }),
    retryBudgetExhausted: (route) => budget.inc({ route }),
    ejected: (route, upstream, reason) => ejections.inc({ route, upstream, reason }),
    unavailable: (route, code) => unavailable.inc({ route, code }),
    healthCheck: (route, upstream, ok) => checks.inc({ route, upstream, result: ok ? 'pass' : 'fail' }),
  };
}
