/**
 * The one place that sets the order of the gateway's stages. Requests pass them top to
 * bottom; responses, refusals included, come back bottom to top; the proxy is terminal.
 *
 *   request-id → trace-context → hygiene → own-answers → route → deprecation → cors → authenticate
 *   → rate-limit → websocket → negotiate-encoding → cache → compress → proxy
 */
import type { HttpCache } from './cache/engine/http-cache.ts';
import type { GatewayConfig } from './config/schema/gateway.ts';
import type { Authenticator } from './identity/authenticate.ts';
import type { DeprecatedCallCounter } from './observability/deprecation-metrics.ts';
import type { SpanExporter } from './observability/otlp-exporter.ts';
import { compose, type NamedStage } from './pipeline/compose.ts';
import type { Stage } from './pipeline/context.ts';
import type { RateLimiter } from './rate-limit/limiter.ts';
import { createAuthenticateStage } from './stages/authenticate.ts';
import { createCacheStage, type SideCall } from './stages/cache.ts';
import { createCompressStage } from './stages/compress.ts';
import { createCorsStage } from './stages/cors.ts';
import { createDeprecationStage } from './stages/deprecation.ts';
import { createHygieneStage } from './stages/hygiene.ts';
import { createOwnAnswersStage } from './stages/own-answers.ts';
import { createNegotiateEncodingStage } from './stages/negotiate-encoding.ts';
import { createProxyStage } from './stages/proxy.ts';
import { createRateLimitStage, RateLimitGate } from './stages/rate-limit.ts';
import { createRequestIdStage } from './stages/request-id.ts';
import { createRouteStage } from './stages/route.ts';
import { createTraceContextStage } from './stages/trace-context.ts';
import { createWebSocketStage } from './stages/websocket.ts';
import type { Forward } from './upstream/forward.ts';
import type { WebSockets } from './websocket/websockets.ts';

export interface StageDeps {
  forward: Forward;
  limiter: RateLimiter;
  cache: HttpCache;
  /** Absent only when no route requires authentication. */
  authenticator?: Authenticator;
  /** Present when spans are exported (tracing.otlp.endpoint). */
  spanExporter?: SpanExporter;
  /** Counts calls to deprecated routes; without it they are not counted. */
  countDeprecatedCall?: DeprecatedCallCounter;
  /** Present when a route takes WebSockets. */
  websockets?: WebSockets;
}

export type StageName =
  | 'request-id'
  | 'trace-context'
  | 'hygiene'
  | 'own-answers'
  | 'route'
  | 'deprecation'
  | 'cors'
  | 'authenticate'
  | 'rate-limit'
  | 'websocket'
  | 'negotiate-encoding'
  | 'cache'
  | 'compress'
  | 'proxy';

/**
 * Stages replaced by name: tests put a stand-in where a real one needs what they lack; `null`
 * leaves a stage out (the bench's cost ladder adds them one at a time).
 */
export type StageOverrides = Partial<Record<StageName, Stage | null>>;

export function createStages(
  config: GatewayConfig,
  deps: StageDeps,
  overrides: StageOverrides = {},
): NamedStage[] {
  // The rate-limit stage's service: it counts CORS preflights too, which are answered before
  // that stage (and before authentication) is reached, and the anonymous refusals of the
  // route and authenticate stages (rateLimits.anonymous).
  const rateLimitGate = new RateLimitGate(deps.limiter);
  const authenticate = authenticateStage(config, deps, overrides.authenticate, rateLimitGate);
  const deprecation = createDeprecationStage(config.routes, deps.countDeprecatedCall ?? (() => {}));
  const cors = createCorsStage(config.routes, rateLimitGate);
  const compress = createCompressStage(config.compression);
  // Set once the list is final, overrides applied (below).
  let belowTheCache: SideCall = deps.forward;
  const stages: { name: StageName; stage: Stage }[] = [
    // First, so that every answer, refusals included, carries the id.
    { name: 'request-id', stage: createRequestIdStage(config.requestId) },
    // Next, so that refusals too are logged and audited with a trace id.
    { name: 'trace-context', stage: createTraceContextStage(config.tracing, deps.spanExporter) },
    // Before anything reads the path or headers: smuggled or ambiguous requests stop here.
    { name: 'hygiene', stage: createHygieneStage(config.listener.limits) },
    // Before routing: `OPTIONS *` has no route, and OPTIONS with Max-Forwards: 0 or TRACE must
    // not go to one.
    { name: 'own-answers', stage: createOwnAnswersStage() },
    { name: 'route', stage: createRouteStage(config.routes, rateLimitGate) },
    // Right after the route is known: every answer of a deprecated route says so, refusals included.
    ...(deprecation === undefined ? [] : [{ name: 'deprecation' as const, stage: deprecation }]),
    // Before authentication: browsers send preflights without credentials, and a script must
    // be able to read a refusal (401, 429) for what it is.
    ...(cors === undefined ? [] : [{ name: 'cors' as const, stage: cors }]),
    // Before anything is spent on the request: who is calling, or 401/403/503.
    ...(authenticate === undefined ? [] : [{ name: 'authenticate' as const, stage: authenticate }]),
    // After authentication, so that limits can count per principal, customer or key.
    { name: 'rate-limit', stage: createRateLimitStage(rateLimitGate) },
    // Once a handshake has passed every check any request does, it is a tunnel, not an answer
    // to encode, cache or proxy; on a route that takes none it is refused here.
    { name: 'websocket', stage: createWebSocketStage(deps.websockets) },
    // Before the cache, which keys its variants on the Accept-Encoding this settles.
    { name: 'negotiate-encoding', stage: createNegotiateEncodingStage(config.compression) },
    // After the limits (a cache hit still counts), right before the proxy it saves a trip to.
    // Its background revalidations pass what is below it too, so they store what a miss would.
    { name: 'cache', stage: createCacheStage(deps.cache, (ctx) => belowTheCache(ctx)) },
    // Below the cache, so that it stores compressed bytes and a hit costs no compression.
    ...(compress === undefined ? [] : [{ name: 'compress' as const, stage: compress }]),
    { name: 'proxy', stage: createProxyStage(deps.forward) },
  ];
  const named = stages.flatMap(({ name, stage }) => {
    const override = overrides[name];
    if (override === null) return [];
    return [{ name, stage: override ?? stage }];
  });
  const cacheAt = named.findIndex((entry) => entry.name === 'cache');
  if (cacheAt !== -1) belowTheCache = forwardThrough(named.slice(cacheAt + 1));
  return named;
}

/**
 * The stages below the cache as one side call, for its background revalidations (once the
 * client's answer is out), so that they fetch what a miss would: compressed and tagged per
 * encoding, by whatever stages the gateway runs there. It runs on a fork of the request's
 * context (the client's finished one is never touched); a refusal or upstream failure is
 * thrown (nothing is stored).
 */
function forwardThrough(below: readonly NamedStage[]): SideCall {
  const run = compose(below);
  return async (fork) => {
    await run(fork);
    const response = fork.response;
    if (response === undefined) throw new Error('the stages below the cache left no response');
    if (response.problem !== undefined) throw response.problem;
    return response;
  };
}

/** Present when a route requires authentication (or a test brings its own). */
function authenticateStage(
  config: GatewayConfig,
  deps: StageDeps,
  standIn: Stage | null | undefined,
  gate: RateLimitGate,
): Stage | undefined {
  if (standIn === null) return undefined;
  if (standIn !== undefined) return standIn;
  if (!config.routes.some((route) => route.auth === 'required')) return undefined;
  if (deps.authenticator === undefined) {
    throw new Error('a route requires authentication but the gateway has no authenticator');
  }
  return createAuthenticateStage({
    authenticator: deps.authenticator,
    limiter: deps.limiter,
    gate,
    trustProxy: config.proxy.trustProxy,
  });
}
