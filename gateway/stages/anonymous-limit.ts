/**
 * The anonymous limit (`rateLimits.anonymous`): requests refused before anyone was identified,
 * a path no route serves (404) or a protected route without a credential (401), are counted
 * per client address; past the limit they are answered 429 with Retry-After instead. Only
 * these answers are counted and replaced, so a valid credential sent from the same address
 * (a NAT, an office) is never refused by it.
 */
import type { GatewayContext } from '../pipeline/context.ts';
import { rateLimitProblem } from '../rate-limit/headers.ts';
import type { RateLimiter } from '../rate-limit/limiter.ts';

/** Throws the 429 when the address is past its anonymous limit; returns otherwise. */
export async function refuseAnonymous(ctx: GatewayContext, limiter: RateLimiter): Promise<void> {
  const limited = await limiter.countAnonymous(ctx.upstream.clientIp);
  if (limited === undefined) return;
  ctx.facts.rateLimit = `limited:${limited.store}`;
  throw rateLimitProblem(limited);
}
