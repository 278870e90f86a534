/**
 * The rate-limit stage: counts the request against every matching policy after
 * authentication (so limits can key on the principal), refuses with 429 when one is exceeded,
 * and puts `RateLimit-Policy` / `RateLimit` on every answer a policy applied to, refusals of
 * later stages included.
 *
 * What it does with the limiter is a service of its own, `RateLimitGate`, which the builder
 * (gateway/stages.ts) hands to this stage and to the CORS stage: preflights, answered before
 * this stage is reached, are counted by the same gate, never by a call of the CORS stage's
 * own into the rate-limit subsystem.
 */
import type { HttpProblem } from '../../shared/errors.ts';
import type { GatewayContext, Stage } from '../pipeline/context.ts';
import { rateLimitFields, rateLimitProblem, storeUnavailableProblem } from '../rate-limit/headers.ts';
import type { RateLimitDecision, RateLimiter, StoreState } from '../rate-limit/limiter.ts';

/** The decision as the audit record states it: `allowed:redis`, `limited:memory`, `unavailable`. */
const AUDIT_FACTS: Record<RateLimitDecision['kind'], Record<StoreState, string>> = {
  allowed: { redis: 'allowed:redis', memory: 'allowed:memory', none: 'allowed:none' },
  limited: { redis: 'limited:redis', memory: 'limited:memory', none: 'limited:none' },
  unavailable: { redis: 'unavailable', memory: 'unavailable', none: 'unavailable' },
};

/**
 * Counts a request, judges it and describes the count on its answer. Three calls rather than
 * one async one: the stage keeps a single promise of its own per request.
 */
export class RateLimitGate {
  readonly #limiter: RateLimiter;

  constructor(limiter: RateLimiter) {
    this.#limiter = limiter;
  }

  /** Counts the request: as its principal once authenticated, else as one from its address. */
  count(ctx: GatewayContext): Promise<RateLimitDecision> {
    return this.#limiter.check({
      method: ctx.req.method ?? 'GET',
      path: ctx.path,
      clientIp: ctx.upstream.clientIp,
      principal: ctx.upstream.principal,
      routePolicies: ctx.upstream.route?.rateLimits,
    });
  }

  /** Tells the audit record; the refusal to answer with when the request may not pass. */
  refusal(ctx: GatewayContext, decision: RateLimitDecision): HttpProblem | undefined {
    ctx.facts.rateLimit = AUDIT_FACTS[decision.kind][decision.store];
    if (decision.kind === 'unavailable') return storeUnavailableProblem();
    if (decision.kind === 'limited') return rateLimitProblem(decision);
    return undefined;
  }

  /**
   * The anonymous limit (`rateLimits.anonymous`), for a request refused before anyone was
   * identified (the route stage's 404, the authenticate stage's 401 without a credential):
   * the 429 to answer instead once its address is past the limit, else undefined. Only these
   * answers are counted and replaced, so a valid credential from the same address (a NAT, an
   * office) is never refused by it.
   */
  async anonymous(ctx: GatewayContext): Promise<HttpProblem | undefined> {
    const limited = await this.#limiter.countAnonymous(ctx.upstream.clientIp);
    if (limited === undefined) return undefined;
    ctx.facts.rateLimit = AUDIT_FACTS.limited[limited.store];
    return rateLimitProblem(limited);
  }

  /**
   * `RateLimit-Policy` and `RateLimit` on an answer, when a policy applied to the request
   * (draft-ietf-httpapi-ratelimit-headers-11): our members after the upstream's own, which an
   * intermediary should not remove. An answer that aged in the cache (`Age` > 0) gets no
   * `RateLimit`: a client following the draft discards the fields of such an answer, so fresh
   * ones there would go unread; the policy, which does not age, is still stated.
   */
  describe(headers: Record<string, string | string[]>, decision: RateLimitDecision): void {
    if (decision.kind === 'unavailable' || decision.outcomes.length === 0) return;
    // Response header names are lower case (as undici gives the upstream's), so that a name
    // is never sent twice in two spellings.
    const fields = rateLimitFields(decision.outcomes);
    headers['ratelimit-policy'] = appendMembers(headers['ratelimit-policy'], fields.policy);
    if (!(Number(headers['age']) > 0))
      headers['ratelimit'] = appendMembers(headers['ratelimit'], fields.state);
  }
}

/** A structured-field list with `ours` after the members already there. */
function appendMembers(before: string | string[] | undefined, ours: string): string {
  if (before === undefined) return ours;
  return [before, ours].flat().join(', ');
}

export function createRateLimitStage(gate: RateLimitGate): Stage {
  return async function rateLimit(ctx, next) {
    const decision = await gate.count(ctx);
    const refusal = gate.refusal(ctx, decision);
    if (refusal !== undefined) throw refusal;
    await next();
    if (ctx.response !== undefined) gate.describe(ctx.response.headers, decision);
  };
}
