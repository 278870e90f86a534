/**
 * The authenticate stage: turns the request's credential into `ctx.principal`, or answers
 * 401/403/503 before anything else of the request is used. Routes written `auth: none` pass
 * without a principal (and the proxy still strips whatever identity a client claimed).
 *
 * Failed authentication is counted per client address by the rate limiter's built-in policy:
 * every credential that is not known good is counted atomically before it is verified, and
 * given back when it verifies, so an address over the limit gets 429 without its guesses being
 * verified (guessing costs the attacker, not the gateway), while a credential verified before
 * is never locked out by what others send from its address.
 */
import type { Authenticator } from '../identity/authenticate.ts';
import { rateLimitProblem } from '../rate-limit/headers.ts';
import type { AuthAttempt, RateLimiter } from '../rate-limit/limiter.ts';
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
    let attempt: AuthAttempt | undefined;
    const outcome = await deps.authenticator.authenticate(ctx.req.headers, ctx.target, async () => {
      attempt = await deps.limiter.countAuthAttempt(ctx.clientIp);
      if (attempt.refusal === undefined) return;
      ctx.facts.auth = { outcome: 'refused', reason: 'too many failed authentications from this address' };
      throw rateLimitProblem(attempt.refusal);
    });
    // Only a credential that was sent and refused stays counted as a guess.
    if (attempt !== undefined && (outcome.ok || outcome.problem.code !== 'ERR_INVALID_TOKEN'))
      await attempt.refund();
    if (!outcome.ok) {
      const unavailable = outcome.problem.status === 503;
      ctx.facts.auth = { outcome: unavailable ? 'unavailable' : 'refused', reason: outcome.reason };
      throw outcome.problem;
    }
    ctx.principal = outcome.principal;
    ctx.facts.auth = { outcome: 'ok', ...(outcome.cacheHit ? { reason: 'cached' } : {}) };
    await next();
  };
}
