/**
 * The introspection endpoint's figures in Prometheus: calls by outcome and how long they took,
 * and the requests judged by a remembered answer instead, so the cache's worth (and the
 * provider's load and latency) can be watched. Made once per registry: a config reload builds
 * a new authenticator on the gateway's registry, and the series run on across it (a series
 * registered twice is an error).
 */
import { Counter, Histogram, type Registry } from 'prom-client';

/** How a call ended: the token accepted, refused, or no usable answer (the request got 503). */
export type CallOutcome = 'active' | 'inactive' | 'error';

export interface IntrospectionMetrics {
  /** One call of the endpoint, judged; `seconds` the call alone (the revocation read aside). */
  called(outcome: CallOutcome, seconds: number): void;
  /** A request judged by a remembered answer, active or not, without a call. */
  remembered(): void;
}

export const NO_INTROSPECTION_METRICS: IntrospectionMetrics = Object.freeze({
  called: () => {},
  remembered: () => {},
});

const made = new WeakMap<Registry, IntrospectionMetrics>();

/** The registry's introspection series, made on first use. */
export function introspectionMetrics(registry: Registry): IntrospectionMetrics {
  let metrics = made.get(registry);
  if (metrics === undefined) made.set(registry, (metrics = createIntrospectionMetrics(registry)));
  return metrics;
}

function createIntrospectionMetrics(registry: Registry): IntrospectionMetrics {
  const calls = new Counter({
    name: 'portico_introspection_calls_total',
    help: 'Calls of the introspection endpoint, by outcome: active (token accepted), inactive (token refused: not active, or an answer the gateway refuses), error (no usable answer: 503).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const hits = new Counter({
    name: 'portico_introspection_cache_hits_total',
    help: 'Requests whose opaque token was judged by a remembered answer (active or not), without a call.',
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'portico_introspection_call_duration_seconds',
    help: 'Time an introspection call took, from request sent to answer read and checked.',
    // From a provider on the same host to auth.introspection.timeoutMs at its largest.
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  return {
    called(outcome, seconds) {
      calls.inc({ outcome });
      duration.observe(seconds);
    },
    remembered: () => hits.inc(),
  };
}
