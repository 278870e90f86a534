/**
 * A real OAuth 2.0 authorization server (oidc-provider) over HTTPS, in-process, issuing
 * client-credentials access tokens as RFC 9068 JWTs for the `portico` audience. Its keys can
 * be rotated while it runs (a new provider instance takes over the same listener).
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';
import type { Agent } from 'undici';
import { fetch as undiciFetch } from 'undici';
import type { TestCertificate } from '../../../support/tls.ts';

/** Resource indicators must be absolute URIs (RFC 8707). */
export const AUDIENCE = 'https://api.portico.test';
export const ALL_SCOPES = 'orders:read orders:write payments:write invoices:read admin';

export interface OidcIssuer {
  issuer: string;
  jwksUrl: string;
  /** Requests the issuer received at its JWKS endpoint. */
  readonly jwksRequests: number;
  /** Client-credentials grant: returns the access token. */
  token(clientId: string, scope?: string): Promise<string>;
  /** Replaces the signing key: the new key signs, the JWKS lists new then old. */
  rotate(): Promise<string>;
  /** Cuts every connection while true (outage). */
  down: boolean;
  close(): Promise<void>;
}

/** client id → customer id: the customer claim comes from the client's registration. */
export const CLIENTS: Record<string, string> = {
  'client-a': 'cust-a',
  'client-b': 'cust-b',
  'client-nocust': '',
};

export async function newSigningKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: `k-${Math.random().toString(36).slice(2, 10)}`, alg: 'ES256', use: 'sig' };
}

function createProvider(issuer: string, keys: JWK[]): Provider {
  return new Provider(issuer, {
    clients: Object.keys(CLIENTS).map((clientId) => ({
      client_id: clientId,
      client_secret: `${clientId}-secret`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'ES256',
      scope: ALL_SCOPES,
    })),
    jwks: { keys },
    scopes: ALL_SCOPES.split(' '),
    ttl: { ClientCredentials: 7200 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          audience: AUDIENCE,
          scope: ALL_SCOPES,
          accessTokenFormat: 'jwt',
          // Long enough for tests that move the clock past the key-staleness window.
          accessTokenTTL: 7200,
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    extraTokenClaims: (_ctx: unknown, token: { clientId?: string }) => {
      const customer = CLIENTS[token.clientId ?? ''];
      return customer === undefined || customer === '' ? {} : { customer_id: customer };
    },
  });
}

export async function startOidcIssuer(cert: TestCertificate, agent: Agent): Promise<OidcIssuer> {
  let jwksRequests = 0;
  let down = false;
  let provider: Provider | undefined;
  const server: Server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    if (down) {
      req.socket.destroy();
      return;
    }
    if (req.url?.startsWith('/jwks') === true) jwksRequests += 1;
    void provider!.callback()(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `https://localhost:${(server.address() as AddressInfo).port}`;
  let keys = [await newSigningKey()];
  provider = createProvider(issuer, keys);

  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    get jwksRequests() {
      return jwksRequests;
    },
    get down() {
      return down;
    },
    set down(value) {
      down = value;
    },
    async token(clientId, scope = 'orders:read orders:write') {
      const response = await undiciFetch(`${issuer}/token`, {
        method: 'POST',
        dispatcher: agent,
        headers: {
          authorization: `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource: AUDIENCE }).toString(),
      });
      const body = (await response.json()) as {
        access_token?: string;
        error?: string;
        error_description?: string;
      };
      if (body.access_token === undefined) throw new Error(`token request failed: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async rotate() {
      const fresh = await newSigningKey();
      keys = [fresh, ...keys];
      provider = createProvider(issuer, keys);
      return fresh.kid!;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
