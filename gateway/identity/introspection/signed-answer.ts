/**
 * Introspection answers as signed JWTs (RFC 9701): the identity provider signs what it says
 * about the token, for this gateway alone. The JWT must be signed by one of the issuer's keys
 * with an allowed algorithm, typed `token-introspection+jwt` (so no other JWT of the provider,
 * an access token say, can stand in for an answer), issued by the issuer, addressed to the
 * gateway's client id (an answer made for another resource server does not speak to us), and
 * issued now (an old answer replayed is refused). The answer is its `token_introspection`
 * claim. A JWT failing any of this means the endpoint, or something on the way, misbehaves:
 * the caller answers 503, never a refusal of the token and never an allow.
 */
import type { JWTPayload, JWTVerifyGetKey } from 'jose';
import { decodeProtectedHeader } from 'jose/decode/protected_header';
import { jwtVerify } from 'jose/jwt/verify';

/** The issuer's keys, as key-source.ts keeps them (structurally: this folder imports none of it). */
export interface AnswerKeys {
  /** `undefined`: no usable keys now. */
  current(): Promise<{ resolver: JWTVerifyGetKey; kids: ReadonlySet<string> } | undefined>;
  refreshForUnknownKid(): Promise<{ resolver: JWTVerifyGetKey; kids: ReadonlySet<string> } | undefined>;
  ready(): boolean;
  close(): void;
}

export interface SignedAnswerRules {
  keys: AnswerKeys;
  issuer: string;
  /** The gateway's client id at the endpoint: the `aud` of answers made for it. */
  clientId: string;
  algorithms: readonly string[];
  clockSkewSeconds: number;
  now: () => number;
}

export type SignedAnswer = { ok: true; answer: Record<string, unknown> } | { ok: false; reason: string };

/** The media type RFC 9701 §4 registers, both to ask with and as the `typ` of the JWT. */
export const SIGNED_ANSWER_TYPE = 'application/token-introspection+jwt';
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

const refused = (reason: string): SignedAnswer => ({ ok: false, reason });

export function signedAnswerReader(rules: SignedAnswerRules): (text: string) => Promise<SignedAnswer> {
  const { keys, now, clockSkewSeconds: skew } = rules;
  return async (text) => {
    const jwt = text.trim();
    // A JSON body here is a downgrade: whoever answered dropped the signature we asked for.
    if (!COMPACT_JWS.test(jwt)) return refused('answer is not a signed JWT');
    let kid: unknown;
    try {
      kid = decodeProtectedHeader(jwt).kid;
    } catch {
      return refused('answer is not a signed JWT');
    }
    let keySet = await keys.current();
    if (typeof kid === 'string' && keySet !== undefined && !keySet.kids.has(kid))
      keySet = await keys.refreshForUnknownKid();
    if (keySet === undefined) return refused("the issuer's keys are unavailable");

    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(jwt, keySet.resolver, {
        algorithms: [...rules.algorithms],
        typ: SIGNED_ANSWER_TYPE,
        issuer: rules.issuer,
        audience: rules.clientId,
        clockTolerance: skew,
        currentDate: new Date(now()),
        requiredClaims: ['iat'],
      }));
    } catch (error) {
      return refused(`signed answer refused: ${joseReason(error)}`);
    }
    // RFC 9701 sets no lifetime; an answer is made for the call it answers, so it is new.
    if (typeof payload.iat !== 'number' || Math.abs(payload.iat - now() / 1000) > skew)
      return refused('signed answer refused: iat is not now');
    const answer = payload['token_introspection'];
    if (typeof answer !== 'object' || answer === null || Array.isArray(answer))
      return refused('signed answer refused: no token_introspection object');
    return { ok: true, answer: answer as Record<string, unknown> };
  };
}

/** jose's code and the claim it names: what failed, for the operator's log. */
function joseReason(error: unknown): string {
  const { code, claim } = error as { code?: unknown; claim?: unknown };
  const what = typeof code === 'string' ? code : 'invalid JWT';
  return typeof claim === 'string' ? `${what} (${claim})` : what;
}
