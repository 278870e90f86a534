/**
 * The one place that sets the order of the gateway's stages. Requests pass them top to
 * bottom; responses come back bottom to top; the proxy is terminal.
 *
 *   request-id → hygiene → route → authenticate → rate-limit → cache → proxy
 */
import type { AssertionKey } from '../shared/identity-assertion.ts';
import { createCacheStage } from './stages/cache.ts';
import type { HttpCache } from './cache/http-cache.ts';
import type { GatewayConfig } from './config.ts';
import type { Authenticator } from './identity/authenticate.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { Stage } from './pipeline.ts';
import { createRateLimitStage } from './stages/rate-limit.ts';
import type { RateLimiter } from './rate-limit/limiter.ts';
import { createAuthenticateStage } from './stages/authenticate.ts';
import { createHygieneStage } from './stages/hygiene.ts';
import { createProxyStage } from './stages/proxy.ts';
import { createRequestIdStage } from './stages/request-id.ts';
import { createRouteStage } from './stages/route.ts';
import type { Upstreams } from './upstreams.ts';

export interface StageDeps {
  upstreams: Upstreams;
  metrics: GatewayMetrics;
  limiter: RateLimiter;
  cache: HttpCache;
  /** Absent only when no route requires authentication. */
  authenticator?: Authenticator;
  assertionKeys?: readonly AssertionKey[];
}

export function createStages(config: GatewayConfig, deps: StageDeps): Stage[] {
  const requiresAuth = config.routes.some((route) => route.auth === 'required');
  if (requiresAuth && deps.authenticator === undefined) {
    throw new Error('a route requires authentication but the gateway has no authenticator');
  }
  return [
    // First, so that every answer, refusals included, carries the id.
    createRequestIdStage(config.requestId),
    // Before anything reads the path or headers: smuggled or ambiguous requests stop here.
    createHygieneStage(),
    createRouteStage(config.routes),
    // Before anything is spent on the request: who is calling, or 401/403/503.
    ...(deps.authenticator === undefined
      ? []
      : [
          createAuthenticateStage({
            authenticator: deps.authenticator,
            limiter: deps.limiter,
          }),
        ]),
    // After authentication, so that limits can count per principal, customer or key.
    createRateLimitStage({
      limiter: deps.limiter,
      onDecision: (ctx, decision) => {
        ctx.facts.rateLimit =
          decision.kind === 'unavailable' ? 'unavailable' : `${decision.kind}:${decision.store}`;
      },
    }),
    // After the limits (a cache hit still counts), right before the proxy it saves a trip to.
    createCacheStage(deps.cache),
    createProxyStage(config.proxy, {
      upstreams: deps.upstreams,
      metrics: deps.metrics,
      maxBodyBytes: config.listener.limits.maxBodyBytes,
      ...(deps.assertionKeys === undefined ? {} : { assertionKeys: deps.assertionKeys }),
    }),
  ];
}
