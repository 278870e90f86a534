/**
 * The one mapping from whatever a request failed with to the problem+json answer it gets:
 * problems thrown by the HTTP layer pass as they are, refusals of the domain become their
 * problem here, and database trouble becomes a 503 a client may retry.
 */
import { HttpProblem } from '../../shared/errors.ts';
import { isDatabaseUnavailable } from '../db/connect.ts';
import { DomainError } from '../domain/errors.ts';
import type { DomainErrorFacts, DomainErrorKind } from '../domain/errors.ts';
import { insufficientScope } from './identity.ts';

type ProblemOf<K extends DomainErrorKind> = (detail: string, facts: DomainErrorFacts[K]) => HttpProblem;

const DOMAIN_PROBLEMS: { [K in DomainErrorKind]: ProblemOf<K> } = {
  'not-pending': (detail) => new HttpProblem('ERR_ORDER_NOT_PENDING', detail),
  'invalid-transition': (detail, facts) =>
    new HttpProblem('ERR_INVALID_TRANSITION', detail, { extensions: facts }),
  'needs-admin': (detail) => insufficientScope('admin', detail),
  'already-paid': (detail) => new HttpProblem('ERR_ALREADY_PAID', detail),
  'amount-mismatch': (detail, { total }) =>
    new HttpProblem('ERR_AMOUNT_MISMATCH', detail, {
      extensions: { errors: [{ pointer: '#/amount', detail: `must equal the order total, ${total}` }] },
    }),
  'idempotency-in-flight': (detail) =>
    new HttpProblem('ERR_IDEMPOTENCY_IN_FLIGHT', detail, { headers: { 'Retry-After': '1' } }),
  'idempotency-key-reused': (detail) => new HttpProblem('ERR_IDEMPOTENCY_KEY_REUSED', detail),
};

function domainProblem<K extends DomainErrorKind>(error: DomainError<K>): HttpProblem {
  return (DOMAIN_PROBLEMS[error.kind] as ProblemOf<K>)(error.message, error.facts);
}

export function toProblem(error: unknown): HttpProblem {
  if (error instanceof HttpProblem) return error;
  if (error instanceof DomainError) return domainProblem(error);
  const code = (error as { code?: unknown } | undefined)?.code;
  // 57014: statement timeout; 40001/40P01: serialization failure, deadlock. Retryable.
  if (code === '57014' || code === '40001' || code === '40P01') {
    return new HttpProblem('ERR_SERVICE_UNAVAILABLE', 'The database is busy; retry shortly', {
      headers: { 'Retry-After': '1' },
    });
  }
  if (isDatabaseUnavailable(error)) {
    // A restart or failover takes seconds; an earlier retry would only add load.
    return new HttpProblem('ERR_SERVICE_UNAVAILABLE', 'The database is unavailable; retry shortly', {
      headers: { 'Retry-After': '2' },
    });
  }
  return new HttpProblem('ERR_INTERNAL', 'The service failed to answer this request');
}
