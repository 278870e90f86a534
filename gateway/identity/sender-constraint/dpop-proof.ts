/**
 * One DPoP proof (RFC 9449 §4.3), checked in the order that refuses cheapest first: its size
 * and shape, its header (`typ`, an allowed asymmetric `alg`, a public `jwk`), then the
 * signature by that key (jose), then the claims against the request it came with: `htm`,
 * `htu`, `iat` within the window, `ath` of the access token, the nonce when one is required.
 * Whether its `jti` was seen before is proof-replay.ts's; whether its key is the token's is
 * the caller's (it gets the key's RFC 7638 thumbprint). The key is imported once per key, not
 * per proof (proof-keys.ts).
 */
import { hash as digest } from 'node:crypto';
import type { JWTPayload, ProtectedHeaderParameters } from 'jose';
import { decodeProtectedHeader } from 'jose/decode/protected_header';
import { jwtVerify } from 'jose/jwt/verify';
import { normaliseHtu } from './htu.ts';
import { proofKey, type ProofKey } from './proof-keys.ts';

/** Larger than any honest proof (an RSA-4096 key in the header is ~1 KiB); refused unread. */
export const MAX_PROOF_BYTES = 4096;
/** A `jti` is kept per proof for the window; a long one is memory an attacker chooses. */
const MAX_JTI_LENGTH = 256;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** Members only a private (or symmetric) key has: a proof must carry the public key alone. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;

export interface ProofExpectations {
  method: string;
  /** The request's URI, normalised (htu.ts); undefined when the request names none we can use. */
  htu: string | undefined;
  accessToken: string;
  algorithms: ReadonlySet<string>;
  maxAgeSeconds: number;
  clockSkewSeconds: number;
  nowSeconds: number;
  /** Checks a proof's `nonce` when the route requires one: 'ok', 'missing' or 'stale'. */
  nonce?: ((nonce: unknown) => 'ok' | 'missing' | 'stale') | undefined;
}

export type ProofResult =
  | { ok: true; jkt: string; jti: string; iat: number; nonce?: string }
  | { ok: false; reason: string; nonce?: 'missing' | 'stale' };

const refused = (reason: string): ProofResult => ({ ok: false, reason });

/** Cheap checks of the header before any signature work; a reason, or the header. */
function checkHeader(
  proof: string,
  algorithms: ReadonlySet<string>,
): { reason: string } | { header: ProtectedHeaderParameters } {
  if (proof.length > MAX_PROOF_BYTES) return { reason: 'DPoP proof too large' };
  if (!COMPACT_JWS.test(proof)) return { reason: 'malformed DPoP proof' };
  // A proof re-spelt (spare base64url bits, the other ECDSA S) keeps its jti, which is what
  // proof-replay.ts remembers: unlike the token cache, no spelling check is needed here.
  let header: ProtectedHeaderParameters;
  try {
    header = decodeProtectedHeader(proof);
  } catch {
    return { reason: 'malformed DPoP proof' };
  }
  if (header.typ !== 'dpop+jwt') return { reason: 'DPoP proof type must be dpop+jwt' };
  if (typeof header.alg !== 'string' || !algorithms.has(header.alg))
    return { reason: 'DPoP proof algorithm not allowed' };
  if ('crit' in header) return { reason: 'unsupported critical header in DPoP proof' };
  const jwk = header.jwk as Record<string, unknown> | undefined;
  if (typeof jwk !== 'object' || jwk === null) return { reason: 'DPoP proof lacks its jwk header' };
  if (PRIVATE_MEMBERS.some((member) => member in jwk))
    return { reason: 'DPoP proof jwk must be a public key' };
  return { header };
}

/** The claims against the request; a reason, or undefined when they all hold. */
function checkClaims(payload: JWTPayload, expect: ProofExpectations): ProofResult | undefined {
  const { jti, htm, htu, iat, ath } = payload as Record<string, unknown>;
  if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH)
    return refused('DPoP proof lacks a valid jti claim');
  if (htm !== expect.method) return refused('DPoP proof is for another method');
  if (typeof htu !== 'string' || expect.htu === undefined || normaliseHtu(htu) !== expect.htu)
    return refused('DPoP proof is for another URI');
  if (typeof iat !== 'number' || !Number.isFinite(iat)) return refused('DPoP proof lacks a valid iat claim');
  if (iat > expect.nowSeconds + expect.clockSkewSeconds) return refused('DPoP proof issued in the future');
  if (iat < expect.nowSeconds - expect.maxAgeSeconds) return refused('DPoP proof too old');
  if (ath !== digest('sha256', expect.accessToken, 'base64url'))
    return refused('DPoP proof is for another access token');
  const nonce = expect.nonce?.((payload as Record<string, unknown>)['nonce']) ?? 'ok';
  if (nonce !== 'ok') return { ok: false, reason: `DPoP nonce ${nonce}`, nonce };
  return undefined;
}

/** Checks one proof for one request; never throws. */
export async function verifyDpopProof(proof: string, expect: ProofExpectations): Promise<ProofResult> {
  const checked = checkHeader(proof, expect.algorithms);
  if ('reason' in checked) return refused(checked.reason);
  let key: ProofKey;
  try {
    key = await proofKey(checked.header);
  } catch {
    return refused('malformed DPoP proof');
  }
  let payload: JWTPayload;
  try {
    // The embedded key verifies: a proof proves possession of the key it names, nothing more;
    // that this key is the token's is checked against cnf.jkt, by the caller.
    ({ payload } = await jwtVerify(proof, key.key, {
      typ: 'dpop+jwt',
      algorithms: [...expect.algorithms],
    }));
  } catch (error) {
    const code = (error as { code?: string }).code;
    return refused(
      code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED'
        ? 'DPoP proof signature verification failed'
        : 'malformed DPoP proof',
    );
  }
  const claims = checkClaims(payload, expect);
  if (claims !== undefined) return claims;
  // Only a nonce that was checked is handed on: the caller may offer a newer one.
  const { nonce } = payload as { nonce?: unknown };
  const checkedNonce = expect.nonce !== undefined && typeof nonce === 'string' ? { nonce } : {};
  return { ok: true, jkt: key.jkt, jti: payload.jti!, iat: payload.iat!, ...checkedNonce };
}
