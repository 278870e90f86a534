/**
 * The cost ladder: gateways on one static upstream that add one stage at a time, so that the
 * difference between two rungs is the price of what the later one adds. Each rung is its own
 * process (measure/bench/ladder-gateway.ts), built by buildGateway with the stages it does not
 * have left out, so the code that runs is the product's own.
 */
import type { StageName } from '../../gateway/stages.ts';

export interface Rung {
  name: string;
  note: string;
  /** Stages left out; `route` left out means a stand-in that sets the one route. */
  without: StageName[];
  auth: boolean;
  rateLimit: 'none' | 'memory' | 'redis';
  cache: boolean;
  /** Audit record and request log line at info. */
  accounting: boolean;
  stageTiming: boolean;
  /** The hop to the upstream is mutual TLS (as to the resource service by default), not plain HTTP. */
  upstreamTls: boolean;
  /** Spans exported over OTLP/HTTP (tracing.otlp.endpoint) to a local sink: the static upstream. */
  traceExport: boolean;
  /**
   * Bearer tokens are opaque and introspected (auth.introspection) at a stub endpoint in the
   * rung's process; the bench's one token is introspected once, then served from the cache.
   */
  introspection?: boolean;
  /** A variant of that rung (its number, as named), not the next step: its step is taken from it. */
  variantOf?: number;
  /**
   * The token is DPoP-bound and each request carries a new proof (RFC 9449), made by the load
   * generator (dpop-proofs.ts); proofs are remembered in Redis, as with replicas.
   */
  dpop?: boolean;
}

/**
 * The stages around a cached route, added together on rung 6: the encoding negotiated before
 * the lookup, and the compression check after it (the static answer is below
 * compression.minBytes, so it is looked at, not compressed, as most single resources are).
 */
const CACHING: StageName[] = ['negotiate-encoding', 'cache', 'compress'];

const BASE = {
  auth: false,
  rateLimit: 'none',
  cache: false,
  accounting: false,
  stageTiming: false,
  upstreamTls: false,
  traceExport: false,
} as const;

/** The full pipeline as it ships, on the plain hop the peer also uses. */
const SHIPPED: Rung = {
  name: 'ladder 8: + stage timing (default)',
  note: 'portico_stage_duration_seconds on: the full pipeline as shipped',
  without: [],
  auth: true,
  rateLimit: 'redis',
  cache: true,
  accounting: true,
  stageTiming: true,
  upstreamTls: false,
  traceExport: false,
};

export const RUNGS: readonly Rung[] = [
  {
    ...BASE,
    name: 'ladder 1: TLS pass-through',
    note: 'listener, TLS, proxy with the upstream pool; no other stage',
    without: [
      'request-id',
      'trace-context',
      'hygiene',
      'own-answers',
      'route',
      'authenticate',
      'rate-limit',
      ...CACHING,
    ],
  },
  {
    ...BASE,
    name: 'ladder 2: + request id, trace context, hygiene, own answers, route',
    note: 'the five stages every request passes first (a new W3C trace per request, not exported)',
    without: ['authenticate', 'rate-limit', ...CACHING],
  },
  {
    ...BASE,
    name: 'ladder 3: + authentication',
    note: 'JWT from the verified-token cache; signed identity assertion upstream',
    without: ['rate-limit', ...CACHING],
    auth: true,
  },
  {
    ...BASE,
    name: 'ladder 4: + rate limit in memory',
    note: 'one policy per principal, counted in the process (no Redis at all)',
    without: CACHING,
    auth: true,
    rateLimit: 'memory',
  },
  {
    ...BASE,
    name: 'ladder 5: + rate limit on Redis',
    note: 'the same policy counted in Redis, with the failed-auth check',
    without: CACHING,
    auth: true,
    rateLimit: 'redis',
  },
  {
    ...BASE,
    name: 'ladder 6: + cache lookup on a miss, encoding negotiation, compression',
    note: 'route cache: true; the request says no-store: looked up, never stored',
    without: [],
    auth: true,
    rateLimit: 'redis',
    cache: true,
  },
  {
    ...BASE,
    name: 'ladder 7: + audit and request log',
    note: 'audit record to a file, request log line at info: the full pipeline',
    without: [],
    auth: true,
    rateLimit: 'redis',
    cache: true,
    accounting: true,
  },
  SHIPPED,
  {
    ...SHIPPED,
    name: 'ladder 9: + mutual TLS upstream',
    note: 'the full pipeline, the hop to the upstream over mutual TLS: the default to the service',
    upstreamTls: true,
  },
  {
    ...SHIPPED,
    name: 'ladder 10: + span export (OTLP/HTTP)',
    note: 'rung 9 with tracing.otlp.endpoint set: a span per request, batched to a local sink (the static upstream)',
    upstreamTls: true,
    traceExport: true,
  },
  {
    ...BASE,
    name: 'ladder 11: rung 3 with an opaque token (introspection, cached answer)',
    note: 'auth.introspection: the cached answer of the token by its digest; compare with rung 3 (a cached JWT)',
    without: ['rate-limit', ...CACHING],
    auth: true,
    introspection: true,
    variantOf: 3,
  },
  {
    ...BASE,
    name: 'ladder 12: rung 3 with a DPoP-bound token (a new proof per request)',
    note: "Authorization: DPoP and a new ES256 proof each request: token from the cache, proof verified, the failed-auth count and its refund and the proof's jti on Redis; compare with rung 3",
    without: ['rate-limit', ...CACHING],
    auth: true,
    dpop: true,
    variantOf: 3,
  },
];
