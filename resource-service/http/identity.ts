/**
 * Identity for the service: only the gateway's signed assertion counts. Whatever else a
 * request carries (Authorization, X-User-Id, ...) is ignored, so the service is safe even when
 * reached directly.
 */
import type { IncomingMessage } from 'node:http';
import { HttpProblem } from '../../shared/errors.ts';
import { IDENTITY_HEADER, verifyAssertion } from '../../shared/identity-assertion.ts';
import type { AssertionKey } from '../../shared/identity-assertion.ts';
import type { Principal, Scope } from '../../shared/principal.ts';
import { hasScope } from '../../shared/principal.ts';

/** Where a refusal's reason goes: the service's log, never the answer. */
export interface RefusalLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * The verified principal of a request, or a 401 problem. The answer is the same whatever
 * failed: a caller who reached the service without the gateway learns nothing from it (which
 * kids exist, how far its clock is off, what the claims must look like). The reason is
 * logged with the request id instead, for the operator.
 */
export function authenticate(
  req: IncomingMessage & { originalUrl?: string; requestId?: string },
  keys: readonly AssertionKey[],
  log?: RefusalLog,
): Principal {
  const header = req.headers[IDENTITY_HEADER];
  const result = verifyAssertion(keys, Array.isArray(header) ? undefined : header, {
    method: req.method ?? '',
    target: req.originalUrl ?? req.url ?? '',
  });
  if (!result.ok) {
    log?.warn(
      { requestId: req.requestId, method: req.method, path: req.url?.split('?')[0], reason: result.reason },
      'identity assertion refused',
    );
    throw new HttpProblem(
      'ERR_INVALID_ASSERTION',
      'This service is reached through the Portico gateway only',
      { headers: { 'WWW-Authenticate': 'Portico-Identity realm="portico"' } },
    );
  }
  return result.principal;
}

/** 403 naming the missing scope, with the RFC 6750 challenge. */
export function insufficientScope(
  scope: Scope,
  detail = `This request needs the ${scope} scope`,
): HttpProblem {
  return new HttpProblem('ERR_INSUFFICIENT_SCOPE', detail, {
    extensions: { required_scope: scope },
    headers: { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${scope}"` },
  });
}

export function requireScope(principal: Principal, scope: Scope): void {
  if (!hasScope(principal, scope)) throw insufficientScope(scope);
}
