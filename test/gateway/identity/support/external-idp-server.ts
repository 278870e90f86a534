/**
 * An identity provider as an operator would run one next to Portico: oidc-provider in its own
 * process, on a loopback port of its own choosing, with discovery, a JWKS and the
 * client-credentials grant issuing RFC 9068 access tokens. Its clients put the customer where
 * real providers do, so that the gateway's claim mapping is what makes them work:
 *
 * - `client-url`: under a URL-named claim (`https://portico.test/customer`), as Auth0 requires;
 * - `client-nested`: in a nested object (`ext.customer_id`);
 * - `client-plain`: nowhere the gateway looks by default... except `customer_id` (the default).
 *
 * Opaque tokens (RFC 7662 introspection, its `introspection` and `revocation` features):
 *
 * - `opaque-a`, `opaque-b`: get opaque (reference) access tokens, with `customer_id`; a token
 *   asked for the resource `https://other.api.test` is for that audience instead;
 * - `portico-gateway`: the gateway's own client at the introspection endpoint, by
 *   `client_secret_basic` (secret `portico-gateway-secret`);
 * - `portico-gateway-jwt`: the same by `private_key_jwt`, with the key printed at start;
 * - `other-api`: another resource server's client at that endpoint (an answer made for it is
 *   not one for the gateway).
 *
 * Every client asking with `Accept: application/token-introspection+jwt` gets the answer as a
 * JWT signed with the provider's key (RFC 9701, the `jwtIntrospection` feature), `aud` its id.
 *
 * Sender-constrained tokens (RFC 9449, RFC 8705): a client that sends a DPoP proof to the token
 * endpoint gets a token bound to its key (`cnf.jkt`, the `dPoP` feature). With `--mtls-cert
 * FILE --mtls-key FILE`, the same provider also listens on HTTPS, asking for a client
 * certificate, and `client-bound` gets tokens bound to the certificate it presented there
 * (`cnf.x5t#S256`, the `mTLS` feature's certificate-bound access tokens).
 *
 * Prints one JSON line `{"issuer": ..., "gatewayKey": <private JWK>, "mtlsOrigin"?: ...}` once
 * listening; stops on SIGTERM or when stdin closes.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { parseArgs } from 'node:util';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';
import { AUDIENCE, OTHER_AUDIENCE } from './idp-audiences.ts';

const SCOPES = 'orders:read orders:write payments:write invoices:read admin';

const CLAIMS: Record<string, Record<string, unknown>> = {
  'client-url': { 'https://portico.test/customer': 'cust-url' },
  'client-nested': { ext: { customer_id: 'cust-nested', tier: 'gold' } },
  'client-plain': { customer_id: 'cust-plain' },
};

const OPAQUE: Record<string, Record<string, unknown>> = {
  'opaque-a': { customer_id: 'cust-opaque-a' },
  'opaque-b': { customer_id: 'cust-opaque-b' },
};

const { values: args } = parseArgs({
  options: { 'mtls-cert': { type: 'string' }, 'mtls-key': { type: 'string' } },
});
const mtls = args['mtls-cert'] !== undefined && args['mtls-key'] !== undefined;
if (mtls) CLAIMS['client-bound'] = { customer_id: 'cust-bound' };

const { privateKey } = await generateKeyPair('ES256', { extractable: true });
const key = { ...(await exportJWK(privateKey)), kid: 'idp-key-1', alg: 'ES256', use: 'sig' };
const gatewayPair = await generateKeyPair('ES256', { extractable: true });
const gatewayKey = { ...(await exportJWK(gatewayPair.privateKey)), kid: 'gw-key-1', alg: 'ES256' };
const gatewayPublicKey: Record<string, unknown> = { ...gatewayKey };
delete gatewayPublicKey['d'];

const server = createServer();
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const provider = new Provider(issuer, {
  clients: [
    ...[...Object.keys(CLAIMS), ...Object.keys(OPAQUE), 'portico-gateway', 'other-api'].map((clientId) => ({
      client_id: clientId,
      client_secret: `${clientId}-secret`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'ES256',
      introspection_signed_response_alg: 'ES256',
      scope: SCOPES,
      ...(clientId === 'client-bound' ? { tls_client_certificate_bound_access_tokens: true } : {}),
    })),
    {
      client_id: 'portico-gateway-jwt',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'ES256',
      id_token_signed_response_alg: 'ES256',
      introspection_signed_response_alg: 'ES256',
      jwks: { keys: [gatewayPublicKey] },
      scope: SCOPES,
    },
  ],
  jwks: { keys: [key] },
  scopes: SCOPES.split(' '),
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    jwtIntrospection: { enabled: true },
    revocation: { enabled: true },
    dPoP: { enabled: true },
    ...(mtls
      ? {
          mTLS: {
            enabled: true,
            certificateBoundAccessTokens: true,
            getCertificate: (ctx: { socket: TLSSocket }) => ctx.socket.getPeerX509Certificate?.(),
          },
        }
      : {}),
    resourceIndicators: {
      enabled: true,
      defaultResource: () => AUDIENCE,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx: unknown, resource: string, client: { clientId: string }) => ({
        audience: resource === OTHER_AUDIENCE ? OTHER_AUDIENCE : AUDIENCE,
        scope: SCOPES,
        accessTokenFormat: client.clientId in OPAQUE ? 'opaque' : 'jwt',
        accessTokenTTL: 600,
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  extraTokenClaims: (_ctx: unknown, token: { clientId?: string }) =>
    CLAIMS[token.clientId ?? ''] ?? OPAQUE[token.clientId ?? ''] ?? {},
});
server.on('request', provider.callback());

// The token endpoint over TLS, asking for (not requiring) a client certificate: the one a
// client presents there is the one its token is bound to.
const tlsServer = mtls
  ? createTlsServer(
      {
        cert: readFileSync(args['mtls-cert']!),
        key: readFileSync(args['mtls-key']!),
        requestCert: true,
        rejectUnauthorized: false,
      },
      provider.callback(),
    )
  : undefined;
if (tlsServer !== undefined) await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));

const stop = () => {
  server.closeAllConnections();
  tlsServer?.closeAllConnections();
  tlsServer?.close();
  server.close(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
const mtlsOrigin =
  tlsServer === undefined ? undefined : `https://127.0.0.1:${(tlsServer.address() as AddressInfo).port}`;
process.stdout.write(
  `${JSON.stringify({ issuer, gatewayKey, ...(mtlsOrigin === undefined ? {} : { mtlsOrigin }) })}\n`,
);
