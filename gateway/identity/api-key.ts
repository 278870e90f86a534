/**
 * Signed API keys: self-contained, so the gateway verifies one with an HMAC and no database
 * round trip; only revocation is looked up per request (api-key-store.ts).
 *
 * Format (one line, URL- and header-safe):
 *
 *     pk_<payload>.<kid>.<mac>
 *
 *   payload  base64url(JSON {"id":"ak_<22 base64url chars>","cid":"<customer>","scp":["..."],"iat":<seconds>})
 *   kid      id of the server-side signing key, [A-Za-z0-9_-]{1,64} (rotation: see api-key-signing-keys.ts)
 *   mac      base64url(HMAC-SHA256(signingKey[kid], "pk_<payload>.<kid>")), 43 characters
 *
 * The MAC covers the kid, so a key cannot be re-labelled to another signing key. The `id` is
 * public (it appears in audit records and `apikey list`); the key as a whole is the secret.
 */
import { randomBytes } from 'node:crypto';
import { decodeMac, hmacSha256, macEquals } from '../../shared/hmac.ts';
import type { HmacKey } from '../../shared/data-dir-secrets.ts';
import { isValidCustomerId } from '../../shared/principal.ts';

export interface ApiKeyClaims {
  id: string;
  cid: string;
  scp: string[];
  iat: number;
}

export type ApiKeyCheck = { ok: true; claims: ApiKeyClaims } | { ok: false; reason: string };

const PREFIX = 'pk_';
/** Well above any real key (a few hundred bytes); refuse before hashing anything longer. */
const MAX_KEY_LENGTH = 4096;
const FORMAT = /^pk_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{43})$/;
export const API_KEY_ID_PATTERN = /^ak_[A-Za-z0-9_-]{22}$/;
const SCOPE_PATTERN = /^[\x21\x23-\x5b\x5d-\x7e]{1,64}$/;

/** Mints a key for `customerId` with `scopes`, signed with `signingKey` (the ring's first). */
export function mintApiKey(
  signingKey: HmacKey,
  grant: { customerId: string; scopes: readonly string[] },
  now = Date.now(),
): { key: string; claims: ApiKeyClaims } {
  if (!isValidCustomerId(grant.customerId)) throw new Error('invalid customer id');
  const bad = grant.scopes.find((scope) => !SCOPE_PATTERN.test(scope));
  if (bad !== undefined) throw new Error('invalid scope');
  const claims: ApiKeyClaims = {
    id: `ak_${randomBytes(16).toString('base64url')}`,
    cid: grant.customerId,
    scp: [...grant.scopes],
    iat: Math.floor(now / 1000),
  };
  const signingInput = `${PREFIX}${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signingKey.kid}`;
  return { key: `${signingInput}.${hmacSha256(signingKey, signingInput).toString('base64url')}`, claims };
}

/** Checks a presented key's shape and signature; revocation is the caller's next step. */
export function verifyApiKey(ring: readonly HmacKey[], presented: string): ApiKeyCheck {
  if (presented.length > MAX_KEY_LENGTH) return { ok: false, reason: 'API key too large' };
  const match = FORMAT.exec(presented);
  if (match === null) return { ok: false, reason: 'malformed API key' };
  const [, payload, kid, signature] = match as unknown as [string, string, string, string];
  const key = ring.find((k) => k.kid === kid);
  if (key === undefined) return { ok: false, reason: 'unknown API key signing key' };
  const expected = hmacSha256(key, `${PREFIX}${payload}.${kid}`);
  // Only the canonical spelling is the key, so one key is never several strings.
  const given = decodeMac(signature);
  if (given === undefined) return { ok: false, reason: 'malformed API key' };
  if (!macEquals(given, expected)) {
    return { ok: false, reason: 'API key signature invalid' };
  }
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed API key' };
  }
  // Signed by us, so malformed content means a minting bug or a leaked signing key: refuse.
  if (!isWellFormed(claims)) return { ok: false, reason: 'malformed API key' };
  return { ok: true, claims };
}

function isWellFormed(c: unknown): c is ApiKeyClaims {
  if (typeof c !== 'object' || c === null) return false;
  const { id, cid, scp, iat } = c as Record<string, unknown>;
  return (
    typeof id === 'string' &&
    API_KEY_ID_PATTERN.test(id) &&
    isValidCustomerId(cid) &&
    Array.isArray(scp) &&
    scp.every((s) => typeof s === 'string' && SCOPE_PATTERN.test(s)) &&
    Number.isInteger(iat)
  );
}
