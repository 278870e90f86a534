/**
 * An OAuth client that makes real DPoP proofs (RFC 9449) with jose, and gets sender-constrained
 * tokens from the external identity provider (external-idp.ts) in its own process:
 * DPoP-bound ones by a proof at its token endpoint, certificate-bound ones by presenting a
 * client certificate at its TLS token endpoint.
 */
import { hash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { Agent, request } from 'undici';
import type { ExternalIdp } from './external-idp.ts';

export const AUDIENCE = 'https://api.portico.test';

export interface DpopKey {
  privateKey: CryptoKey;
  jwk: JWK;
  /** RFC 7638 thumbprint: the `cnf.jkt` of tokens bound to this key. */
  jkt: string;
  alg: string;
}

export async function createDpopKey(alg = 'ES256'): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { privateKey, jwk, jkt: await calculateJwkThumbprint(jwk, 'sha256'), alg };
}

export interface ProofClaims {
  htm: string;
  htu: string;
  /** The access token the proof goes with (its `ath`); none at the token endpoint. */
  accessToken?: string;
  nonce?: string;
  /** Seconds since the epoch; now by default. */
  iat?: number;
  jti?: string;
}

/** One proof, as a client library makes it: `typ: dpop+jwt`, the public key in `jwk`. */
export function dpopProof(
  key: DpopKey,
  claims: ProofClaims,
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT({
    htm: claims.htm,
    htu: claims.htu,
    jti: claims.jti ?? randomUUID(),
    ...(claims.accessToken === undefined ? {} : { ath: hash('sha256', claims.accessToken, 'base64url') }),
    ...(claims.nonce === undefined ? {} : { nonce: claims.nonce }),
  })
    .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.jwk, ...header })
    .setIssuedAt(claims.iat ?? Math.floor(Date.now() / 1000))
    .sign(key.privateKey);
}

const TOKEN_BODY = (scope: string) =>
  new URLSearchParams({ grant_type: 'client_credentials', scope, resource: AUDIENCE }).toString();

const basic = (clientId: string) =>
  `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString('base64')}`;

async function tokenFrom(
  response: Awaited<ReturnType<typeof request>>,
): Promise<{ token: string; type: string }> {
  const body = (await response.body.json()) as { access_token?: string; token_type?: string };
  if (body.access_token === undefined) throw new Error(`token request failed: ${JSON.stringify(body)}`);
  return { token: body.access_token, type: body.token_type ?? '' };
}

/** A DPoP-bound access token: the client-credentials grant with a proof of `key`. */
export async function dpopBoundToken(
  idp: ExternalIdp,
  clientId: string,
  key: DpopKey,
  scope = 'orders:read orders:write',
): Promise<{ token: string; type: string }> {
  const url = `${idp.issuer}/token`;
  const proof = await dpopProof(key, { htm: 'POST', htu: url });
  return tokenFrom(
    await request(url, {
      method: 'POST',
      headers: {
        authorization: basic(clientId),
        'content-type': 'application/x-www-form-urlencoded',
        dpop: proof,
      },
      body: TOKEN_BODY(scope),
    }),
  );
}

/** A certificate-bound access token: the grant at the TLS token endpoint, presenting `client`'s certificate. */
export async function certificateBoundToken(
  idp: ExternalIdp,
  clientId: string,
  client: { cert: string; key: string },
  scope = 'orders:read orders:write',
): Promise<{ token: string; type: string }> {
  if (idp.mtlsOrigin === undefined) throw new Error('the identity provider was started without mTLS');
  // The provider's TLS certificate is the test's own; what matters here is the client's.
  const agent = new Agent({ connect: { cert: client.cert, key: client.key, rejectUnauthorized: false } });
  try {
    return await tokenFrom(
      await request(`${idp.mtlsOrigin}/token`, {
        method: 'POST',
        dispatcher: agent,
        headers: { authorization: basic(clientId), 'content-type': 'application/x-www-form-urlencoded' },
        body: TOKEN_BODY(scope),
      }),
    );
  } finally {
    await agent.close();
  }
}
