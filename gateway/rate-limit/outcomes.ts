/**
 * What one policy's count means for a request: where it stands (for the RateLimit fields) and,
 * for a policy of its own, the 429 to answer.
 */
import type { CompiledPolicy, Counted, StoreState } from './policy-counter.ts';

/** Where one policy stands for this request, for the RateLimit headers. */
export interface PolicyOutcome {
  name: string;
  remaining: number;
  resetSeconds: number;
  exceeded: boolean;
  /**
   * This policy's member of `RateLimit-Policy` (`"name";q=LIMIT;w=WINDOW`), the same on every
   * answer: the limit and window reach the answer through it (headers.ts).
   */
  policyField: string;
}

/** A refusal: the policies' outcomes, and when the request may be retried. */
export interface LimitedDecision {
  kind: 'limited';
  outcomes: PolicyOutcome[];
  retryAfterSeconds: number;
  store: StoreState;
}

export function outcome(policy: CompiledPolicy, counted: Exclude<Counted, { failed: true }>): PolicyOutcome {
  return {
    name: policy.config.name,
    remaining: Math.max(counted.limit - counted.consumed, 0),
    resetSeconds: Math.max(Math.ceil(counted.msBeforeNext / 1000), 0),
    exceeded: counted.consumed > counted.limit,
    policyField: policy.policyField,
  };
}

/** The 429 of one policy counted on its own (the built-in ones), or undefined within its limit. */
export function limitedBy(
  policy: CompiledPolicy,
  counted: Exclude<Counted, { failed: true }>,
): LimitedDecision | undefined {
  const o = outcome(policy, counted);
  if (!o.exceeded) return undefined;
  return {
    kind: 'limited',
    outcomes: [o],
    store: counted.store,
    retryAfterSeconds: Math.max(1, o.resetSeconds),
  };
}
