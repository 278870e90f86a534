/**
 * The rate-limit stage: counts the request against every matching policy after
 * authentication (so limits can key on the principal), refuses with 429 when one is exceeded,
 * and puts `RateLimit-Policy` / `RateLimit` on every answer a policy applied to, errors from
 * later stages included.
 */
import { HttpProblem } from '../../shared/errors.ts';
import type { GatewayContext, Stage } from '../pipeline.ts';
import { rateLimitHeaders, rateLimitProblem, storeUnavailableProblem } from '../rate-limit/headers.ts';
import type { RateLimitDecision, RateLimiter } from '../rate-limit/limiter.ts';

export interface RateLimitStageDeps {
  limiter: RateLimiter;
  /** Told every decision, for the audit log. */
  onDecision?: (ctx: GatewayContext, decision: RateLimitDecision) => void;
}

export function createRateLimitStage(deps: RateLimitStageDeps): Stage {
  return async function rateLimit(ctx, next) {
    const decision = await deps.limiter.check({
      method: ctx.req.method ?? 'GET',
      path: ctx.path,
      clientIp: ctx.clientIp,
      ...(ctx.principal === undefined ? {} : { principal: ctx.principal }),
    });
    deps.onDecision?.(ctx, decision);
    if (decision.kind === 'unavailable') throw storeUnavailableProblem();
    if (decision.kind === 'limited') throw rateLimitProblem(decision);
    const headers = rateLimitHeaders(decision.outcomes);
    try {
      await next();
    } catch (error) {
      if (error instanceof HttpProblem) Object.assign(error.headers, headers);
      throw error;
    }
    if (ctx.response !== undefined) Object.assign(ctx.response.headers, headers);
  };
}
