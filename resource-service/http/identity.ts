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

/** The verified principal of a request, or a 401 problem. */
export function authenticate(
  req: IncomingMessage & { originalUrl?: string },
  keys: readonly AssertionKey[],
): Principal {
  const header = req.headers[IDENTITY_HEADER];
  const result = verifyAssertion(keys, Array.isArray(header) ? undefined : header, {
    method: req.method ?? '',
    target: req.originalUrl ?? req.url ?? '',
  });
  if (!result.ok) {
    throw new HttpProblem(
      'ERR_INVALID_ASSERTION',
      'This service is reached through the Portico gateway only',
      {
        headers: { 'WWW-Authenticate': 'Portico-Identity realm="portico"' },
        extensions: { reason: result.reason },
      },
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
