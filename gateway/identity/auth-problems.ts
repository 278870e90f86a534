/**
 * The failures of authentication as RFC 6750 wants them: 401 with a `Bearer` challenge that
 * carries no error code when nothing was sent and `invalid_token` when a credential was, and
 * 403 `insufficient_scope` naming the scope. Descriptions are ours, fixed and generic: they
 * say which check failed, never echo the credential.
 */
import { HttpProblem } from '../../shared/errors.ts';
import { hasScope, type Principal, type Scope } from '../../shared/principal.ts';

export const REALM = 'portico';

/** RFC 6750 error_description allows %x20-21 / %x23-5B / %x5D-7E only. */
const quotable = (text: string) => text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?');

export function unauthenticated(): HttpProblem {
  return new HttpProblem('ERR_UNAUTHENTICATED', 'This endpoint requires an access token or an API key.', {
    headers: { 'www-authenticate': `Bearer realm="${REALM}"` },
  });
}

export function invalidToken(description: string): HttpProblem {
  return new HttpProblem('ERR_INVALID_TOKEN', `The credential was refused: ${description}.`, {
    headers: {
      'www-authenticate': `Bearer realm="${REALM}", error="invalid_token", error_description="${quotable(description)}"`,
    },
  });
}

export function keysUnavailable(): HttpProblem {
  return new HttpProblem(
    'ERR_SERVICE_UNAVAILABLE',
    'Credentials cannot be verified right now; retry shortly.',
    {
      headers: { 'retry-after': '5' },
    },
  );
}

export function credentialInUrl(parameter: string): HttpProblem {
  return new HttpProblem(
    'ERR_CREDENTIAL_IN_URL',
    'Credentials in the URL are refused (they leak into logs and caches); send them in the Authorization header.',
    { extensions: { errors: [{ parameter, detail: 'credential parameter not accepted' }] } },
  );
}

/**
 * `undefined` when `principal` holds every scope of `scopes` (`admin` implies all), else the
 * 403 naming the scopes required.
 */
export function requireScopes(principal: Principal, scopes: readonly Scope[]): HttpProblem | undefined {
  const missing = scopes.filter((scope) => !hasScope(principal, scope));
  if (missing.length === 0) return undefined;
  const required = scopes.join(' ');
  return new HttpProblem('ERR_INSUFFICIENT_SCOPE', `This request requires the scope ${missing.join(' ')}.`, {
    extensions: { required_scope: required },
    headers: {
      'www-authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${quotable(required)}", error_description="requires scope ${quotable(missing.join(' '))}"`,
    },
  });
}
