/**
 * What the domain refuses, said in its own terms. The domain rules and the data modules throw
 * these; the HTTP layer alone decides how each one is answered (http/problems.ts), so that a
 * rule never needs to know about status codes, problem types or headers.
 */
import type { OrderStatus } from '../model/schemas.ts';

/** Each kind of refusal, and the facts an answer may need to explain it. */
export interface DomainErrorFacts {
  /** The order has left `pending`, and the change asked for needs it pending. */
  'not-pending': { status: OrderStatus };
  /** The state machine has no such step (or not through this operation). */
  'invalid-transition': { from: OrderStatus; to: OrderStatus; allowed?: readonly OrderStatus[] };
  /** A step that only an administrator may take. */
  'needs-admin': Record<string, never>;
  'already-paid': Record<string, never>;
  /** A payment must cover the order total exactly. */
  'amount-mismatch': { total: number; currency: string };
  /** The first request with this idempotency key is still running. */
  'idempotency-in-flight': Record<string, never>;
  /** The idempotency key was used for a request with another body. */
  'idempotency-key-reused': Record<string, never>;
}

export type DomainErrorKind = keyof DomainErrorFacts;

export class DomainError<K extends DomainErrorKind = DomainErrorKind> extends Error {
  override name = 'DomainError';
  readonly kind: K;
  readonly facts: DomainErrorFacts[K];

  /** `message` says what happened to this request, in words a client can read. */
  constructor(kind: K, message: string, facts: DomainErrorFacts[K]) {
    super(message);
    this.kind = kind;
    this.facts = facts;
  }
}
