/**
 * What an introspection answer (RFC 7662 §2.2) means for the request: the principal of an
 * active token meant for this API, or why not. The answer is trusted only as far as the
 * identity provider speaks for it: it must name our audience (a token minted for another API
 * must not work here), the configured issuer when it names one, a type of access token, and
 * times that hold now. The customer claim, scopes and `cnf` are read as from a JWT.
 */
import { isValidCustomerId, knownScopes, type Principal } from '../../../shared/principal.ts';
import { claimReader, readScopes } from '../claims/claim-path.ts';
import { readConfirmation } from '../claims/token-confirmation.ts';

export interface AnswerRules {
  issuer: string;
  audience: string | readonly string[];
  customerClaim: string;
  clockSkewSeconds: number;
  maxLifetimeSeconds: number;
}

/** `expiresAt`: epoch ms of the token's `exp`, when the answer gives one. */
export type AnswerMeaning =
  { ok: true; principal: Principal; expiresAt: number | undefined } | { ok: false; reason: string };

/** Token types that are access tokens (RFC 6750, RFC 9449); a refresh token is not one. */
const ACCESS_TOKEN_TYPES = new Set(['bearer', 'dpop', 'n_a']);

const refused = (reason: string): AnswerMeaning => ({ ok: false, reason });

export function answerJudge(
  rules: AnswerRules,
): (answer: Record<string, unknown>, now: number) => AnswerMeaning {
  const audiences = new Set([rules.audience].flat());
  const customerOf = claimReader(rules.customerClaim);
  const skew = rules.clockSkewSeconds;

  return (answer, now) => {
    if (answer['active'] !== true) return refused('token not active');
    if (answer['iss'] !== undefined && answer['iss'] !== rules.issuer) return refused('unexpected issuer');
    if (!namesAudience(answer['aud'], audiences)) return refused('unexpected audience');
    const type = answer['token_type'];
    if (type !== undefined && (typeof type !== 'string' || !ACCESS_TOKEN_TYPES.has(type.toLowerCase())))
      return refused('not an access token');

    const times = checkTimes(answer, now / 1000, skew, rules.maxLifetimeSeconds);
    if (times !== undefined) return refused(times);

    const sub = answer['sub'] ?? answer['client_id'];
    // A client-credentials token has no user: the client is its subject, as in RFC 9068 §2.2.
    if (typeof sub !== 'string' || sub === '') return refused('malformed sub claim');
    const customerId = customerOf(answer);
    if (!isValidCustomerId(customerId)) return refused(`token lacks a valid ${rules.customerClaim} claim`);
    const scopes = readScopes(answer);
    if (scopes === undefined) return refused('malformed scope claim');
    const binding = readConfirmation(answer);
    if (!binding.ok) return refused(binding.reason);

    const principal: Principal = Object.freeze({
      subject: sub,
      customerId,
      scopes: Object.freeze(knownScopes(scopes)),
      authMethod: 'jwt' as const,
      ...(binding.cnf === undefined ? {} : { cnf: binding.cnf }),
    });
    const exp = answer['exp'];
    return { ok: true, principal, expiresAt: typeof exp === 'number' ? exp * 1000 : undefined };
  };
}

function namesAudience(aud: unknown, audiences: ReadonlySet<string>): boolean {
  if (typeof aud === 'string') return audiences.has(aud);
  return Array.isArray(aud) && aud.some((value) => typeof value === 'string' && audiences.has(value));
}

/** The time claims, each optional in RFC 7662 but checked when given. */
function checkTimes(
  answer: Record<string, unknown>,
  nowSeconds: number,
  skew: number,
  maxLifetime: number,
): string | undefined {
  const { exp, iat, nbf } = answer;
  for (const value of [exp, iat, nbf])
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value)))
      return 'malformed time claim';
  if (typeof exp === 'number' && nowSeconds >= exp + skew) return 'token expired';
  if (typeof nbf === 'number' && nbf > nowSeconds + skew) return 'token not yet valid';
  if (typeof iat === 'number' && iat > nowSeconds + skew) return 'token issued in the future';
  if (typeof exp === 'number' && typeof iat === 'number' && exp - iat > maxLifetime)
    return 'token lifetime exceeds the maximum';
  return undefined;
}
