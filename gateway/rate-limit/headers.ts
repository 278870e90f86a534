/**
 * Rate-limit answers: `RateLimit-Policy` and `RateLimit` (IETF httpapi RateLimit header
 * fields draft, structured-field lists: `"name";q=LIMIT;w=WINDOW` and `"name";r=REMAINING;t=RESET`),
 * and the 429 problem with `Retry-After` in whole seconds (RFC 6585, RFC 9110). The 429 keeps v1's
 * published problem type (`urn:portico:problem:rate-limited`: no breaking change within a version)
 * and carries the draft's `violated-policies` member of its quota-exceeded type.
 */
import { HttpProblem } from '../../shared/errors.ts';
import type { PolicyOutcome, RateLimitDecision } from './limiter.ts';

/** Policy names are restricted by the config schema to characters safe inside an sf-string. */
export function rateLimitHeaders(outcomes: readonly PolicyOutcome[]): Record<string, string> {
  if (outcomes.length === 0) return {};
  const fields = rateLimitFields(outcomes);
  return { 'RateLimit-Policy': fields.policy, RateLimit: fields.state };
}

/** The values of `RateLimit-Policy` (`policy`) and `RateLimit` (`state`). */
export function rateLimitFields(outcomes: readonly PolicyOutcome[]): { policy: string; state: string } {
  // One policy is the common case: its fields without the arrays of the general one.
  if (outcomes.length === 1) return { policy: outcomes[0]!.policyField, state: stateMember(outcomes[0]!) };
  return {
    policy: outcomes.map((o) => o.policyField).join(', '),
    state: outcomes.map(stateMember).join(', '),
  };
}

/** A policy's member of `RateLimit`: `"name";r=REMAINING;t=RESET`. */
function stateMember(o: PolicyOutcome): string {
  return `"${o.name}";r=${o.remaining};t=${o.resetSeconds}`;
}

export function rateLimitProblem(decision: Extract<RateLimitDecision, { kind: 'limited' }>): HttpProblem {
  const exceeded = decision.outcomes.filter((o) => o.exceeded).map((o) => o.name);
  return new HttpProblem(
    'ERR_RATE_LIMITED',
    `Rate limit ${exceeded.join(', ')} exceeded; retry in ${decision.retryAfterSeconds} s`,
    {
      headers: { 'Retry-After': String(decision.retryAfterSeconds), ...rateLimitHeaders(decision.outcomes) },
      // `violated-policies`: the draft's quota-exceeded member; `policies` as v1 published it.
      extensions: {
        policies: exceeded,
        'violated-policies': exceeded,
        retry_after: decision.retryAfterSeconds,
      },
    },
  );
}

export function storeUnavailableProblem(): HttpProblem {
  return new HttpProblem(
    'ERR_SERVICE_UNAVAILABLE',
    'Rate limits cannot be checked right now; retry shortly',
    {
      headers: { 'Retry-After': '1' },
    },
  );
}
