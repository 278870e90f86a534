/**
 * The rate-limit stage: counts the request against every matching policy after
 * authentication (so limits can key on the principal), refuses with 429 when one is exceeded,
 * and puts `RateLimit-Policy` / `RateLimit` on every answer a policy applied to, refusals of
 * later stages included.
 */
import type { Stage } from '../pipeline/context.ts';
import { rateLimitFields, rateLimitProblem, storeUnavailableProblem } from '../rate-limit/headers.ts';
import type { RateLimitDecision, RateLimiter, StoreState } from '../rate-limit/limiter.ts';

export interface RateLimitStageDeps {
  limiter: RateLimiter;
}

/** The decision as the audit record states it: `allowed:redis`, `limited:memory`, `unavailable`. */
const AUDIT_FACTS: Record<RateLimitDecision['kind'], Record<StoreState, string>> = {
  allowed: { redis: 'allowed:redis', memory: 'allowed:memory', none: 'allowed:none' },
  limited: { redis: 'limited:redis', memory: 'limited:memory', none: 'limited:none' },
  unavailable: { redis: 'unavailable', memory: 'unavailable', none: 'unavailable' },
};

export function createRateLimitStage(deps: RateLimitStageDeps): Stage {
  return async function rateLimit(ctx, next) {
    const decision = await deps.limiter.check({
      method: ctx.req.method ?? 'GET',
      path: ctx.path,
      clientIp: ctx.upstream.clientIp,
      principal: ctx.upstream.principal,
    });
    ctx.facts.rateLimit = AUDIT_FACTS[decision.kind][decision.store];
    if (decision.kind === 'unavailable') throw storeUnavailableProblem();
    if (decision.kind === 'limited') throw rateLimitProblem(decision);
    await next();
    // Response header names are lower case (as undici gives the upstream's), so that a name
    // is never sent twice in two spellings.
    const response = ctx.response;
    if (response === undefined || decision.outcomes.length === 0) return;
    const fields = rateLimitFields(decision.outcomes);
    response.headers['ratelimit-policy'] = fields.policy;
    response.headers['ratelimit'] = fields.state;
  };
}
