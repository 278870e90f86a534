/**
 * Verifies OAuth 2.0 access tokens (RFC 9068 JWTs) the way RFC 8725 asks: cheap refusals
 * first (size, shape, header), keys only from the configured issuer, an algorithm allow-list,
 * every time claim checked with a bounded skew. Verified tokens are remembered by hash until
 * their `exp`, because an ES256 verify costs ~90 µs and a cache hit ~2 µs.
 */
import { hash as digest } from 'node:crypto';
import type { JWTPayload, ProtectedHeaderParameters } from 'jose';
import { decodeProtectedHeader } from 'jose/decode/protected_header';
import { jwtVerify } from 'jose/jwt/verify';
import { LRUCache } from 'lru-cache';
import { isValidCustomerId, knownScopes, type Principal } from '../../shared/principal.ts';
import { claimReader, readScopes } from './claims/claim-path.ts';
import { canonicalSegments, lowSForm } from './jws-spelling.ts';
import type { KeySource } from './key-source.ts';
import { readConfirmation } from './claims/token-confirmation.ts';
import type { TokenResult } from './claims/token-result.ts';

export interface JwtVerifierOptions {
  issuer: string;
  audience: string | string[];
  algorithms: readonly string[];
  clockSkewSeconds: number;
  /** Longest `exp` - `iat` accepted. */
  maxLifetimeSeconds: number;
  maxTokenBytes: number;
  customerClaim: string;
  cacheMaxEntries: number;
  keys: KeySource;
  now: () => number;
}

/**
 * `invalid`: the token is refused (401 invalid_token, `reason` is a safe description).
 * `unavailable`: no usable keys right now (503), the token may well be good.
 */
export type JwtResult = TokenResult;

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** Header members that point at keys: trusting them lets the token choose its own verifier. */
const KEY_REFERENCES = ['jku', 'x5u', 'jwk', 'x5c'] as const;

interface CachedToken {
  principal: Principal;
  expiresAt: number;
  kid: string | undefined;
}

const invalid = (reason: string): JwtResult => ({ ok: false, kind: 'invalid', reason });

export function createJwtVerifier(options: JwtVerifierOptions) {
  const { keys, now, clockSkewSeconds } = options;
  const allowed = new Set(options.algorithms);
  const customerOf = claimReader(options.customerClaim);
  const cache =
    options.cacheMaxEntries > 0
      ? new LRUCache<string, CachedToken>({ max: options.cacheMaxEntries })
      : undefined;

  function fromCache(hash: string): Principal | undefined {
    const hit = cache?.get(hash);
    if (hit === undefined) return undefined;
    // Never past exp, and never once its key has left the issuer's key set (rotated out
    // after a compromise): both fall through to a full verify, which then refuses.
    const keySet = keys.snapshot();
    if (
      now() >= hit.expiresAt ||
      keySet === undefined ||
      (hit.kid !== undefined && !keySet.kids.has(hit.kid))
    ) {
      cache?.delete(hash);
      return undefined;
    }
    return hit.principal;
  }

  /** The principal of a token verified before and still valid, from the cache; no verify. */
  function known(token: string): Principal | undefined {
    if (cache === undefined || token.length > options.maxTokenBytes) return undefined;
    // One-shot digest: same bytes as createHash, half the cost, on every request.
    return fromCache(digest('sha256', token, 'base64url'));
  }

  async function verify(token: string): Promise<JwtResult> {
    if (token.length > options.maxTokenBytes) return invalid('token too large');
    if (!COMPACT_JWS.test(token)) return invalid('malformed token');

    const hash = cache === undefined ? '' : digest('sha256', token, 'base64url');
    const cached = cache === undefined ? undefined : fromCache(hash);
    if (cached !== undefined) return { ok: true, principal: cached, cacheHit: true };
    if (!canonicalSegments(token)) return invalid('non-canonical base64url encoding');

    let header: ProtectedHeaderParameters;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      return invalid('malformed token');
    }
    const lowSHash = cache === undefined ? hash : lowSKey(token, header, hash);
    const sameToken = lowSHash === hash ? undefined : fromCache(lowSHash);
    if (sameToken !== undefined) return { ok: true, principal: sameToken, cacheHit: true };
    if (KEY_REFERENCES.some((member) => member in header)) {
      return invalid('token header names its own key; keys come only from the configured issuer');
    }
    if ('crit' in header) return invalid('unsupported critical header');
    if (typeof header.alg !== 'string' || !allowed.has(header.alg)) return invalid('algorithm not allowed');
    if (header.kid !== undefined && typeof header.kid !== 'string') return invalid('malformed token');

    let keySet = await keys.current();
    if (keySet === undefined) return { ok: false, kind: 'unavailable', reason: 'issuer keys unavailable' };
    if (header.kid !== undefined && !keySet.kids.has(header.kid)) {
      keySet = await keys.refreshForUnknownKid();
      if (keySet === undefined) return { ok: false, kind: 'unavailable', reason: 'issuer keys unavailable' };
      if (!keySet.kids.has(header.kid)) return invalid('unknown signing key');
    }

    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keySet.resolver, {
        algorithms: [...allowed],
        issuer: options.issuer,
        audience: options.audience,
        clockTolerance: clockSkewSeconds,
        typ: 'at+jwt',
        currentDate: new Date(now()),
        requiredClaims: ['exp', 'iat', 'sub'],
      }));
    } catch (error) {
      return invalid(describeJoseError(error));
    }

    const principal = principalOf(payload, options, customerOf);
    if (typeof principal === 'string') return invalid(principal);
    if (cache !== undefined && typeof payload.exp === 'number') {
      const entry = { principal, expiresAt: payload.exp * 1000, kid: header.kid };
      cache.set(hash, entry);
      if (lowSHash !== hash) cache.set(lowSHash, entry);
    }
    return { ok: true, principal, cacheHit: false };
  }

  return { known, verify };
}

export type JwtVerifier = ReturnType<typeof createJwtVerifier>;

/**
 * The principal a verified token's claims describe, or why they do not describe one: the
 * checks jose leaves to us (iat, lifetime, sub, customer, scopes, confirmation).
 */
function principalOf(
  payload: JWTPayload,
  options: JwtVerifierOptions,
  customerOf: (claims: JWTPayload) => unknown,
): Principal | string {
  const { now, clockSkewSeconds } = options;
  const nowSeconds = now() / 1000;
  // jose checks iat only together with maxTokenAge; a token from the future is forged or
  // minted by a broken clock, either way not ours to accept.
  if (typeof payload.iat !== 'number' || payload.iat > nowSeconds + clockSkewSeconds) {
    return 'token issued in the future';
  }
  // A token that lives for years is a credential that cannot be taken back once stolen (exp
  // 10^12 was accepted). iat is required and not in the future, so exp - iat also bounds
  // how far from now exp may be (plus the skew).
  if (typeof payload.exp !== 'number' || payload.exp - payload.iat > options.maxLifetimeSeconds) {
    return 'token lifetime exceeds the maximum';
  }
  if (typeof payload.sub !== 'string' || payload.sub === '') return 'malformed sub claim';
  const customerId = customerOf(payload);
  if (!isValidCustomerId(customerId)) return `token lacks a valid ${options.customerClaim} claim`;
  const scopes = readScopes(payload);
  if (scopes === undefined) return 'malformed scope claim';
  const binding = readConfirmation(payload);
  if (!binding.ok) return binding.reason;

  return Object.freeze({
    subject: payload.sub,
    customerId,
    scopes: Object.freeze(knownScopes(scopes)),
    authMethod: 'jwt' as const,
    ...(binding.cnf === undefined ? {} : { cnf: binding.cnf }),
  });
}

/**
 * The cache key of the token's low-S form: the other S of a signature verified before is that
 * token, and the cache keys both (jws-spelling.ts). `hash` itself for any other token.
 */
function lowSKey(token: string, header: ProtectedHeaderParameters, hash: string): string {
  if (typeof header.alg !== 'string') return hash;
  const lowS = lowSForm(token, header.alg);
  return lowS === token ? hash : digest('sha256', lowS, 'base64url');
}

/** jose's errors, as descriptions safe to send back: they name the check, never the token. */
function describeJoseError(error: unknown): string {
  const { code, claim, reason } = error as { code?: string; claim?: string; reason?: string };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return 'token expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (reason === 'missing') return `token lacks the ${claim} claim`;
      if (claim === 'nbf') return 'token not yet valid';
      if (claim === 'iss') return 'unexpected issuer';
      if (claim === 'aud') return 'unexpected audience';
      if (claim === 'typ') return 'token type must be at+jwt';
      return `invalid ${claim ?? 'claim'}`;
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'signature verification failed';
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'algorithm not allowed';
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return 'no matching signing key';
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return 'ambiguous signing key';
    case 'ERR_JOSE_NOT_SUPPORTED':
      return 'unsupported token';
    default:
      return 'malformed token';
  }
}
