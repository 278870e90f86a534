/**
 * The failures of authentication as RFC 6750 wants them: 401 with a `Bearer` challenge that
 * carries no error code when nothing was sent and `invalid_token` when a credential was, and
 * 403 `insufficient_scope` naming the scope. Descriptions are ours, fixed and generic, and
 * never echo the credential.
 *
 * A description says which check failed only when the client can see it in its own request
 * (the token's shape, its times, its claims by name; the customer claim an authentic token
 * lacks, which an operator wiring an identity provider needs to see): what the client needs
 * to fix it, and nothing a prober did not know. Whether a key id exists, a signature matched, the issuer or
 * audience was right, a key was revoked, is one answer for all ("invalid credential"): told
 * apart, they let a prober enumerate key ids and revocations. The precise reason goes to the
 * log and the audit record.
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

/** Reasons about what the client can see in its own request: told as they are. */
const PUBLIC_REASONS = new Set([
  'token expired',
  'token not yet valid',
  'token issued in the future',
  'token lifetime exceeds the maximum',
  'token too large',
  'token type must be at+jwt',
  'malformed token',
  'malformed sub claim',
  'malformed scope claim',
  'malformed cnf claim',
  'unsupported cnf confirmation method',
  'malformed Authorization header',
  'unsupported authorization scheme',
  'algorithm not allowed',
  'unsupported critical header',
  'non-canonical base64url encoding',
  'API key too large',
  'malformed API key',
  'token header names its own key; keys come only from the configured issuer',
]);
/** What the client is told of every other refusal. */
const UNDISCLOSED = 'invalid credential';

/** The description a client is told for a refusal's reason (the reason itself is logged). */
export function publicReason(reason: string): string {
  return PUBLIC_REASONS.has(reason) || /^token lacks (the|a valid) \S+ claim$/.test(reason)
    ? reason
    : UNDISCLOSED;
}

export function invalidToken(reason: string): HttpProblem {
  const description = publicReason(reason);
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
