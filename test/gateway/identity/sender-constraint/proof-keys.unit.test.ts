/**
 * A DPoP proof's key is imported once and then known (proof-keys.ts): what a known key must not
 * change is every refusal a fresh import and check would give. Real proofs, signed with jose.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { proofKey, PROOF_KEYS_MAX_BYTES } from '../../../../gateway/identity/sender-constraint/proof-keys.ts';
import {
  verifyDpopProof,
  type ProofExpectations,
} from '../../../../gateway/identity/sender-constraint/dpop-proof.ts';
import { createDpopKey, dpopProof, type DpopKey } from '../support/dpop-client.ts';

const HTU = 'https://api.portico.test/v1/orders';
const TOKEN = 'an-access-token';
const expectations = (): ProofExpectations => ({
  method: 'GET',
  htu: HTU,
  accessToken: TOKEN,
  algorithms: new Set(['ES256', 'RS256']),
  maxAgeSeconds: 60,
  clockSkewSeconds: 5,
  nowSeconds: Math.floor(Date.now() / 1000),
});
const claims = { htm: 'GET', htu: HTU, accessToken: TOKEN };

/** A new key whose honest proof was accepted: the key is known from then on. */
async function knownKey(): Promise<DpopKey> {
  const key = await createDpopKey();
  expect(await verifyDpopProof(await dpopProof(key, claims), expectations())).toMatchObject({ ok: true });
  return key;
}

const refusedFor = (reason: string) => ({ ok: false, reason });

describe('DPoP proof keys, imported once', () => {
  it('gives the same key object and the RFC 7638 thumbprint for every proof of one key', async () => {
    const key = await createDpopKey();
    const header = { alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk };
    const first = await proofKey(header);
    expect(first.jkt).toBe(key.jkt);
    expect(await proofKey({ ...header })).toBe(first);
    for (let i = 0; i < 3; i++) {
      const result = await verifyDpopProof(await dpopProof(key, claims), expectations());
      expect(result).toMatchObject({ ok: true, jkt: key.jkt });
    }
  });

  it('still refuses a proof that names a known key but is signed by another', async () => {
    const [victim, attacker] = [await knownKey(), await createDpopKey()];
    const forged = await new SignJWT({ htm: 'GET', htu: HTU, jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: victim.jwk })
      .setIssuedAt()
      .sign(attacker.privateKey);
    expect(await verifyDpopProof(forged, expectations())).toEqual(
      refusedFor('DPoP proof signature verification failed'),
    );
  });

  it('refuses a known key spelt with a `use` or `alg` it contradicts, as a first import does', async () => {
    const key = await knownKey();
    for (const jwk of [
      { ...key.jwk, use: 'enc' },
      { ...key.jwk, alg: 'ES384' },
    ]) {
      const proof = await dpopProof(key, claims, { jwk });
      expect(await verifyDpopProof(proof, expectations())).toEqual(refusedFor('malformed DPoP proof'));
    }
  });

  it('refuses a known key under another algorithm than it was imported for', async () => {
    const key = await knownKey();
    // The same P-256 key named as RS256: jose refuses to import it for that algorithm.
    await expect(proofKey({ alg: 'RS256', typ: 'dpop+jwt', jwk: key.jwk })).rejects.toThrow();
  });

  it('holds a bounded number of keys: past its size the oldest is imported again', async () => {
    const key = await createDpopKey();
    // Each spelling is a key of its own; a long `kid` makes each entry large.
    const header = (i: number) => ({ alg: 'ES256', jwk: { ...key.jwk, kid: `${i}:${'k'.repeat(4000)}` } });
    const first = await proofKey(header(0));
    const entries = Math.ceil(PROOF_KEYS_MAX_BYTES / 4000) + 1;
    for (let i = 1; i <= entries; i++) await proofKey(header(i));
    expect(await proofKey(header(entries))).toBe(await proofKey(header(entries)));
    expect(await proofKey(header(0))).not.toBe(first);
  });
});
