/**
 * The public keys DPoP proofs carry in their `jwk` header, imported once per key rather than
 * once per proof. A client signs every proof with the one key its token is bound to, and
 * importing that key (jose's EmbeddedJWK: WebCrypto's importKey of the JWK) was about an
 * eighth of a DPoP request's CPU in a profile under load (the signature check about a fifth).
 *
 * A key is known by its algorithm and its header's `jwk` exactly as the proof spelt it, so a
 * known key is what importing the same header again would give: every check EmbeddedJWK makes
 * (a public key only, `use` and `alg` agreeing) was made when it was first imported, on the
 * same members. The signature is still checked on every proof, against this key. Memory is
 * bounded by the keys' spelt size: the header is the client's choice, up to a proof's size.
 */
import type { CryptoKey, JWK, JWSHeaderParameters } from 'jose';
import { EmbeddedJWK } from 'jose/jwk/embedded';
import { calculateJwkThumbprint } from 'jose/jwk/thumbprint';
import { LRUCache } from 'lru-cache';

/** A proof's verification key and its RFC 7638 thumbprint (what `cnf.jkt` names). */
export interface ProofKey {
  key: CryptoKey;
  jkt: string;
}

/** What a known key costs besides its spelling: the imported key object and the entry. */
const ENTRY_OVERHEAD_BYTES = 512;
/** About 1 600 honest P-256 keys, 1 100 RSA-2048 ones, or 290 spelt as long as a proof allows. */
export const PROOF_KEYS_MAX_BYTES = 1024 * 1024;

const known = new LRUCache<string, ProofKey>({
  maxSize: PROOF_KEYS_MAX_BYTES,
  sizeCalculation: (_, id) => id.length + ENTRY_OVERHEAD_BYTES,
});

/**
 * The key of a proof whose protected header is `header` (its `typ`, `alg` and `jwk` already
 * checked by the caller), imported as jose's EmbeddedJWK imports it the first time; throws as
 * EmbeddedJWK does for a key it refuses.
 */
export async function proofKey(header: JWSHeaderParameters): Promise<ProofKey> {
  const id = `${header.alg}.${JSON.stringify(header.jwk)}`;
  const hit = known.get(id);
  if (hit !== undefined) return hit;
  const key = await EmbeddedJWK(header);
  const entry = { key, jkt: await calculateJwkThumbprint(header.jwk as JWK, 'sha256') };
  known.set(id, entry);
  return entry;
}
