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
 * Prints one JSON line `{"issuer": ...}` once listening; stops on SIGTERM or when stdin closes.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

export const AUDIENCE = 'https://api.portico.test';
const SCOPES = 'orders:read orders:write payments:write invoices:read admin';

const CLAIMS: Record<string, Record<string, unknown>> = {
  'client-url': { 'https://portico.test/customer': 'cust-url' },
  'client-nested': { ext: { customer_id: 'cust-nested', tier: 'gold' } },
  'client-plain': { customer_id: 'cust-plain' },
};

const { privateKey } = await generateKeyPair('ES256', { extractable: true });
const key = { ...(await exportJWK(privateKey)), kid: 'idp-key-1', alg: 'ES256', use: 'sig' };

const server = createServer();
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const provider = new Provider(issuer, {
  clients: Object.keys(CLAIMS).map((clientId) => ({
    client_id: clientId,
    client_secret: `${clientId}-secret`,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    token_endpoint_auth_method: 'client_secret_basic',
    id_token_signed_response_alg: 'ES256',
    scope: SCOPES,
  })),
  jwks: { keys: [key] },
  scopes: SCOPES.split(' '),
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => AUDIENCE,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        audience: AUDIENCE,
        scope: SCOPES,
        accessTokenFormat: 'jwt',
        accessTokenTTL: 600,
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  extraTokenClaims: (_ctx: unknown, token: { clientId?: string }) => CLAIMS[token.clientId ?? ''] ?? {},
});
server.on('request', provider.callback());

const stop = () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
