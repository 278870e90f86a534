/**
 * The authenticate stage: turns the request's credential into `ctx.principal`, or answers
 * 401/403/503 before anything else of the request is used. Routes written `auth: none` pass
 * without a principal (and the proxy still strips whatever identity a client claimed).
 *
 * Failed authentication is counted per client address by the rate limiter's built-in policy,
 * and an address over that limit is refused before its credential is even parsed: guessing
 * tokens or keys costs the attacker, not the gateway.
 */
import type { Authenticator } from '../identity/authenticate.ts';
import { rateLimitProblem } from '../rate-limit/headers.ts';
import type { RateLimiter } from '../rate-limit/limiter.ts';
import type { Stage } from '../pipeline/context.ts';

export interface AuthenticateStageDeps {
  authenticator: Authenticator;
  limiter: RateLimiter;
}

export function createAuthenticateStage(deps: AuthenticateStageDeps): Stage {
  return async function authenticate(ctx, next) {
    if (ctx.route?.auth === 'none') {
      ctx.facts.auth = { outcome: 'none' };
      return next();
    }
    const { clientIp } = ctx;
    const throttled = await deps.limiter.checkAuthFailures(clientIp);
    if (throttled !== undefined && throttled.kind === 'limited') {
      ctx.facts.auth = { outcome: 'refused', reason: 'too many failed authentications from this address' };
      throw rateLimitProblem(throttled);
    }
    const outcome = await deps.authenticator.authenticate(ctx.req.headers, ctx.target);
    if (!outcome.ok) {
      const unavailable = outcome.problem.status === 503;
      ctx.facts.auth = { outcome: unavailable ? 'unavailable' : 'refused', reason: outcome.reason };
      // Only a credential that was sent and refused counts as a guess.
      if (outcome.problem.code === 'ERR_INVALID_TOKEN') await deps.limiter.recordAuthFailure(clientIp);
      throw outcome.problem;
    }
    ctx.principal = outcome.principal;
    ctx.facts.auth = { outcome: 'ok', ...(outcome.cacheHit ? { reason: 'cached' } : {}) };
    await next();
  };
}
