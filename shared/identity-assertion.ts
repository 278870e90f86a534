/**
 * The gateway's signed identity assertion: how the resource service learns who is calling
 * without trusting anything a client sent.
 *
 * Wire format, in the `Portico-Identity` request header:
 *
 *     v1.<kid>.<base64url(JSON claims)>.<base64url(HMAC-SHA256(key[kid], "v1.<kid>.<claims>"))>
 *
 * HMAC rather than a signature: both ends are ours and share a secret, and verifying costs a
 * few microseconds per request instead of the ~50-100 µs of an asymmetric verify. The claims
 * bind the assertion to one request (method, target, request id) and to a short lifetime, so a
 * captured header cannot be replayed against another endpoint, or later.
 *
 * The target is bound by its SHA-256 (`htd`), not repeated: a repeated target made the head
 * the service receives grow by 4/3 of the target, and a long target the gateway accepted met
 * the service's head limit as a bare 431 (issue 34 item 2). An assertion with `htu` (the
 * target itself, the earlier spelling) still verifies, so gateway and service upgrade in any
 * order.
 *
 * A principal whose token was sender-constrained carries `cnf` (RFC 7800: `jkt` for DPoP,
 * `x5t#S256` for a client certificate), which the gateway checked the request proved; a
 * service that predates it ignores the member, one that knows it reads it.
 */
import { hash } from 'node:crypto';
import type { HmacKey } from './data-dir-secrets.ts';
import { decodeMac, hmacSha256, macEquals } from './hmac.ts';
import type { Principal, TokenConfirmation } from './principal.ts';
import { isValidCustomerId } from './principal.ts';

export const IDENTITY_HEADER = 'portico-identity';
const VERSION = 'v1';

/** A named HMAC key; the first key of a ring signs, every key of it verifies (rotation). */
export type AssertionKey = HmacKey;

export interface AssertionClaims {
  sub: string;
  cid: string;
  scp: string[];
  amr: 'jwt' | 'apikey';
  akid?: string;
  /** What the token was bound to and the request proved (absent: a bearer token, an API key). */
  cnf?: TokenConfirmation;
  /** HTTP method the assertion was issued for. */
  htm: string;
  /** base64url SHA-256 of the request target (path and query) it was issued for. */
  htd?: string;
  /** The request target itself: the earlier spelling, still verified (see above). */
  htu?: string;
  rid: string;
  iat: number;
  exp: number;
}

export interface AssertionOptions {
  /** Lifetime of an issued assertion, seconds. */
  lifetimeSeconds?: number;
  /** Tolerated clock difference between gateway and service hosts, seconds. */
  clockSkewSeconds?: number;
  now?: () => number;
}

const DEFAULT_LIFETIME = 30;
const DEFAULT_SKEW = 5;
/** Refuse assertions claiming to live longer than this, whatever their signature. */
const MAX_LIFETIME = 120;
/** A header larger than this is not ours; refuse before any work. */
const MAX_ASSERTION_LENGTH = 8192;

/**
 * The JSON of a principal's claims, open at the end: `{"sub":…,"cid":…,"scp":[…],"amr":…[,"akid":…][,"cnf":…]`.
 * Made once per principal object (the gateway reuses one per verified credential), so that a
 * request adds only its own claims to it.
 */
const principalClaims = new WeakMap<Principal, string>();

function principalJson(principal: Principal): string {
  let json = principalClaims.get(principal);
  if (json === undefined) {
    const claims: Pick<AssertionClaims, 'sub' | 'cid' | 'scp' | 'amr' | 'akid' | 'cnf'> = {
      sub: principal.subject,
      cid: principal.customerId,
      scp: [...principal.scopes],
      amr: principal.authMethod,
      ...(principal.keyId === undefined ? {} : { akid: principal.keyId }),
      ...(principal.cnf === undefined ? {} : { cnf: principal.cnf }),
    };
    json = JSON.stringify(claims).slice(0, -1);
    principalClaims.set(principal, json);
  }
  return json;
}

/**
 * Signs an assertion of `principal` for one request. Used by the gateway. The claims are the
 * JSON of an AssertionClaims, in its order.
 */
export function signAssertion(
  key: AssertionKey,
  principal: Principal,
  request: { method: string; target: string; requestId: string },
  options: AssertionOptions = {},
): string {
  const iat = Math.floor((options.now?.() ?? Date.now()) / 1000);
  const exp = iat + (options.lifetimeSeconds ?? DEFAULT_LIFETIME);
  const claims =
    `${principalJson(principal)},"htm":${JSON.stringify(request.method)},"htd":"${targetDigest(request.target)}"` +
    `,"rid":${JSON.stringify(request.requestId)},"iat":${iat},"exp":${exp}}`;
  const signingInput = `${VERSION}.${key.kid}.${Buffer.from(claims).toString('base64url')}`;
  return `${signingInput}.${hmacSha256(key, signingInput).toString('base64url')}`;
}

export type AssertionResult =
  { ok: true; principal: Principal; claims: AssertionClaims } | { ok: false; reason: string };

/**
 * Verifies an assertion for the request it arrived with. Never throws: a bad assertion is a
 * result with a reason (for logs), which the caller answers with 401.
 */
export function verifyAssertion(
  keys: readonly AssertionKey[],
  header: string | undefined,
  request: { method: string; target: string },
  options: AssertionOptions = {},
): AssertionResult {
  if (header === undefined || header === '') return { ok: false, reason: 'missing' };
  if (header.length > MAX_ASSERTION_LENGTH) return { ok: false, reason: 'oversized' };
  const parts = header.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION) return { ok: false, reason: 'malformed' };
  const [, kid, payload, signature] = parts as [string, string, string, string];
  const key = keys.find((k) => k.kid === kid);
  if (key === undefined) return { ok: false, reason: 'unknown kid' };

  const expected = hmacSha256(key, `${VERSION}.${kid}.${payload}`);
  const given = decodeMac(signature);
  if (given === undefined || !macEquals(given, expected)) {
    return { ok: false, reason: 'bad signature' };
  }

  let claims: AssertionClaims;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as AssertionClaims;
  } catch {
    return { ok: false, reason: 'malformed claims' };
  }
  if (!isWellFormed(claims)) return { ok: false, reason: 'malformed claims' };

  const now = Math.floor((options.now?.() ?? Date.now()) / 1000);
  const skew = options.clockSkewSeconds ?? DEFAULT_SKEW;
  if (claims.exp + skew < now) return { ok: false, reason: 'expired' };
  if (claims.iat - skew > now) return { ok: false, reason: 'issued in the future' };
  if (claims.exp - claims.iat > MAX_LIFETIME) return { ok: false, reason: 'lifetime too long' };
  const sameTarget =
    claims.htd !== undefined ? claims.htd === targetDigest(request.target) : claims.htu === request.target;
  if (claims.htm !== request.method || !sameTarget) {
    return { ok: false, reason: 'issued for another request' };
  }

  return {
    ok: true,
    claims,
    principal: {
      subject: claims.sub,
      customerId: claims.cid,
      scopes: claims.scp,
      authMethod: claims.amr,
      ...(claims.akid === undefined ? {} : { keyId: claims.akid }),
      ...(claims.cnf === undefined ? {} : { cnf: claims.cnf }),
    },
  };
}

/** What binds an assertion to its target: a fixed 43 characters, however long the target. */
export function targetDigest(target: string): string {
  return hash('sha256', target, 'base64url');
}

function isWellFormed(c: AssertionClaims): boolean {
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.sub === 'string' &&
    c.sub.length > 0 &&
    isValidCustomerId(c.cid) &&
    Array.isArray(c.scp) &&
    c.scp.every((s) => typeof s === 'string') &&
    (c.amr === 'jwt' || c.amr === 'apikey') &&
    (c.akid === undefined || typeof c.akid === 'string') &&
    (c.cnf === undefined || isConfirmation(c.cnf)) &&
    typeof c.htm === 'string' &&
    (typeof c.htd === 'string' || typeof c.htu === 'string') &&
    typeof c.rid === 'string' &&
    Number.isInteger(c.iat) &&
    Number.isInteger(c.exp)
  );
}

function isConfirmation(cnf: unknown): cnf is TokenConfirmation {
  if (typeof cnf !== 'object' || cnf === null || Array.isArray(cnf)) return false;
  const { jkt, 'x5t#S256': x5t } = cnf as Record<string, unknown>;
  return (
    (jkt === undefined || typeof jkt === 'string') &&
    (x5t === undefined || typeof x5t === 'string') &&
    (jkt !== undefined || x5t !== undefined)
  );
}
