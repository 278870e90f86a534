/**
 * Envoy's retry budget: retries in flight on a route may be at most `percent` of its requests
 * in flight (never fewer than `minRetryConcurrency`), so that when a service struggles the
 * retries cannot multiply the load on it.
 */
import type { RetryBudget } from '../config/schema/upstream.ts';
import type { UpstreamSet } from './upstream-set.ts';

export function withinRetryBudget(set: UpstreamSet, budget: RetryBudget): boolean {
  const allowed = Math.max(budget.minRetryConcurrency, Math.floor((set.active * budget.percent) / 100));
  return set.retriesActive < allowed;
}
