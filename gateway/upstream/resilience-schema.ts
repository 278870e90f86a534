/**
 * The `proxy` settings that keep a sick or overloaded target from hurting a route: outlier
 * ejection, the retry budget and the circuit breaker. Spread into the `proxy` schema
 * (config-schema.ts). None reloads: the proxy section needs a restart.
 */
import { Type, type Static } from '@sinclair/typebox';

export const OutlierDetectionSchema = Type.Object(
  {
    consecutiveFailures: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 5,
      description:
        'Connection failures, timeouts or 5xx answers in a row from one target that eject it from its route.',
    }),
    baseEjectionMs: Type.Integer({
      minimum: 100,
      default: 10_000,
      description:
        "A target's first ejection lasts this long, its n-th n times as long; each base interval it then " +
        'serves without being ejected takes one off n.',
    }),
    maxEjectionMs: Type.Integer({
      minimum: 100,
      default: 120_000,
      description: 'Longest an ejection lasts, however often the target was ejected.',
    }),
    maxEjectionPercent: Type.Integer({
      minimum: 0,
      maximum: 100,
      default: 50,
      description:
        "Most of a route's targets ejected at once, in percent, rounded down: a route with one target never " +
        'ejects it; with two, at most one at the default.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'Passive health: a target that fails in a row is taken out of its route for a growing, bounded time ' +
      '(logged, and counted in portico_upstream_ejections_total). Needs a restart.',
  },
);

export const RetryBudgetSchema = Type.Object(
  {
    percent: Type.Integer({
      minimum: 0,
      maximum: 100,
      default: 20,
      description: "Retries in flight, as a percentage of the route's requests in flight.",
    }),
    minRetryConcurrency: Type.Integer({
      minimum: 0,
      default: 3,
      description:
        'Retries in flight always allowed, whatever the percentage gives (a quiet route still retries).',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'Caps retries per route, as Envoy does, so that retries cannot multiply an overload: past the budget a ' +
      'failure is answered (502/504) instead of retried. `proxy.retries` still caps retries per request. Needs a restart.',
  },
);

export const CircuitBreakerSchema = Type.Object(
  {
    maxPendingRequests: Type.Integer({
      minimum: 0,
      default: 1024,
      description:
        'Requests per target that may wait for its answer beyond `connectionsPerUpstream`; past it the target ' +
        'takes no more until some are answered.',
    }),
    retryAfterSeconds: Type.Integer({
      minimum: 1,
      maximum: 3600,
      default: 1,
      description: 'Retry-After of the 503 answered when every target of a route is full.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'A cap on the requests waiting for each target: when every target of a route is full, the answer is an ' +
      'immediate 503 problem (ERR_UPSTREAM_OVERLOADED) with Retry-After instead of a queue that grows. Needs a restart.',
  },
);

export const RESILIENCE_PROPERTIES = {
  outlierDetection: OutlierDetectionSchema,
  retryBudget: RetryBudgetSchema,
  circuitBreaker: CircuitBreakerSchema,
};

export type OutlierDetection = Static<typeof OutlierDetectionSchema>;
export type RetryBudget = Static<typeof RetryBudgetSchema>;
export type CircuitBreaker = Static<typeof CircuitBreakerSchema>;

/** Checks the schema cannot express, each `path: problem`. */
export function checkResilience(proxy: { outlierDetection: OutlierDetection }): string[] {
  const { baseEjectionMs, maxEjectionMs } = proxy.outlierDetection;
  return maxEjectionMs < baseEjectionMs
    ? [`proxy.outlierDetection.maxEjectionMs: must be at least baseEjectionMs (${baseEjectionMs})`]
    : [];
}
