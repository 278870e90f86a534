/**
 * DPoP proofs (RFC 9449) for the bench's DPoP rung: one new proof per request, since the
 * gateway refuses a proof used twice, at any replica. They are made synchronously with
 * node:crypto, in the load generator's process (load.ts) as each request is built, and by
 * the bench's own probe: what they cost is the load generator's CPU, never the measured
 * gateway's, and the proofs are as fresh as a real client's (`iat` now, a new `jti`).
 */
import { createPrivateKey, generateKeyPairSync, hash, randomUUID, sign, type JsonWebKey } from 'node:crypto';

/** What a process needs to make proofs for one URL: passed to the load generator as JSON. */
export interface DpopLoad {
  /** The client's P-256 private key, as a JWK (a bench key, made for the run). */
  privateJwk: JsonWebKey;
  /** The DPoP-bound access token the proofs go with (their `ath`). */
  token: string;
  method: string;
  /** The URI the proofs are for (`htu`): the URL requested, without query. */
  htu: string;
}

/** A new P-256 key: its private JWK, and the RFC 7638 thumbprint a token's `cnf.jkt` names. */
export function createDpopKey(): { privateJwk: JsonWebKey; jkt: string } {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const privateJwk = privateKey.export({ format: 'jwk' });
  // RFC 7638: the required members of an EC key, in lexicographic order, no white space.
  const canonical = JSON.stringify({
    crv: privateJwk.crv,
    kty: privateJwk.kty,
    x: privateJwk.x,
    y: privateJwk.y,
  });
  return { privateJwk, jkt: hash('sha256', canonical, 'base64url') };
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Returns a function that makes a new proof each time it is called. */
export function proofMaker(load: DpopLoad): () => string {
  const key = createPrivateKey({ key: load.privateJwk, format: 'jwk' });
  const { crv, kty, x, y } = load.privateJwk;
  // The header is the same for every proof: encoded once.
  const header = base64url({ typ: 'dpop+jwt', alg: 'ES256', jwk: { crv, kty, x, y } });
  const ath = hash('sha256', load.token, 'base64url');
  return () => {
    const claims = {
      jti: randomUUID(),
      htm: load.method,
      htu: load.htu,
      iat: Math.floor(Date.now() / 1000),
      ath,
    };
    const signingInput = `${header}.${base64url(claims)}`;
    const signature = sign('sha256', Buffer.from(signingInput), { key, dsaEncoding: 'ieee-p1363' });
    return `${signingInput}.${signature.toString('base64url')}`;
  };
}
