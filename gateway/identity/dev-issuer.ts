/**
 * The development issuer: what a zero-config `npm start` trusts, and what `npm run token`
 * signs with. Its EC P-256 key pair is created once in the data dir, so the gateway and the
 * CLI agree on it without any exchange; a gateway configured with a JWKS URL or file never
 * uses it.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { JSONWebKeySet, JWK } from 'jose';
import { SignJWT } from 'jose/jwt/sign';
import { assertPrivateDirectory, readOrCreateSecretFile } from '../../shared/data-dir-secrets.ts';

export const DEV_ISSUER = 'urn:portico:dev-issuer';
export const DEV_AUDIENCE = 'portico';

/** The development issuer of one data dir. */
export interface DevIssuer {
  issuer: string;
  audience: string;
  /** Public keys only. */
  jwks: JSONWebKeySet;
  /**
   * Signs an RFC 9068 access token (`typ: at+jwt`, ES256) with `iss`, `aud`, `iat`, `exp`
   * and `jti` set; `claims` adds the rest (`sub`, `client_id`, `scope`, the customer claim).
   */
  sign(claims: Record<string, unknown>, ttlSeconds: number): Promise<string>;
}

function createKeyFile(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' });
  return `${JSON.stringify({ ...jwk, alg: 'ES256', use: 'sig' })}\n`;
}

/**
 * Loads the development issuer of `dataDir`, creating its key pair on first use
 * (`dev-issuer/private.jwk.json`, mode 0600, and the public `dev-issuer/jwks.json`).
 */
export function loadOrCreateDevIssuer(dataDir: string): DevIssuer {
  const dir = join(dataDir, 'dev-issuer');
  // Its own directory is judged with each file; the data dir holding it must be private too.
  assertPrivateDirectory(dataDir);
  const privateJwk = JSON.parse(readOrCreateSecretFile(join(dir, 'private.jwk.json'), createKeyFile)) as JWK;
  const privateKey = createPrivateKey({ key: privateJwk, format: 'jwk' });
  const { kty, crv, x, y } = createPublicKey(privateKey).export({ format: 'jwk' });
  const publicJwk = { kty, crv, x, y } as JWK;
  // RFC 7638 thumbprint: required members only, in lexicographic order.
  const kid = createHash('sha256').update(JSON.stringify({ crv, kty, x, y })).digest('base64url');
  const jwks: JSONWebKeySet = { keys: [{ ...publicJwk, kid, alg: 'ES256', use: 'sig' }] };
  // Derived from whichever private key won the creation race, so it always matches it.
  readOrCreateSecretFile(join(dir, 'jwks.json'), () => `${JSON.stringify(jwks, null, 2)}\n`);

  return {
    issuer: DEV_ISSUER,
    audience: DEV_AUDIENCE,
    jwks,
    sign(claims, ttlSeconds) {
      const iat = Math.floor(Date.now() / 1000);
      return new SignJWT({ jti: randomUUID(), ...claims })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid })
        .setIssuer(DEV_ISSUER)
        .setAudience(DEV_AUDIENCE)
        .setIssuedAt(iat)
        .setExpirationTime(iat + ttlSeconds)
        .sign(privateKey);
    },
  };
}
