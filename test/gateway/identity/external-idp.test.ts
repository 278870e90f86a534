/**
 * Your own identity provider, end to end: oidc-provider runs as a separate process (discovery,
 * JWKS, client-credentials grant issuing RFC 9068 `at+jwt` tokens), openid-client gets a token
 * from it as any OAuth client would, and the gateway, also its own process, accepts it with
 * the customer mapped from where that provider puts it (a URL-named claim, a nested path), and
 * says at start which issuer it trusts. Scopes from `scp` arrays are checked with tokens of our
 * own signing, since oidc-provider only ever writes `scope`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, decodeProtectedHeader, type CryptoKey } from 'jose';
import * as client from 'openid-client';
import { pino } from 'pino';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../gateway/config/load.ts';
import { createAuthenticator, type Authenticator } from '../../../gateway/identity/authenticate.ts';
import { loadAssertionKeys } from '../../../shared/assertion-keys.ts';
import { IDENTITY_HEADER, verifyAssertion } from '../../../shared/identity-assertion.ts';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../support/harness.ts';
import { startExternalIdp, type ExternalIdp } from './support/external-idp.ts';

const AUDIENCE = 'https://api.portico.test';
let idp: ExternalIdp;
let upstream: RecordingUpstream;
let gateway: GatewayProcess & { configFile: string };
const dirs: string[] = [];
const authenticators: Authenticator[] = [];
// The gateway process serves the self-signed development certificate of its data dir.
const insecureLocalAgent = new Agent({ connect: { rejectUnauthorized: false } });

/** An access token as any OAuth client gets one: discovery, then the client-credentials grant. */
async function tokenFor(clientId: string, scope = 'orders:read invoices:read'): Promise<string> {
  const config = await client.discovery(
    new URL(idp.issuer),
    clientId,
    undefined,
    client.ClientSecretBasic(`${clientId}-secret`),
    // The provider listens on plain HTTP on loopback in this test only.
    { execute: [client.allowInsecureRequests] },
  );
  const response = await client.clientCredentialsGrant(config, { scope, resource: AUDIENCE });
  return response.access_token;
}

beforeAll(async () => {
  idp = await startExternalIdp();
  upstream = await startRecordingUpstream();
  gateway = await startGatewayProcess({
    routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'required' }],
    auth: {
      jwt: {
        issuer: idp.issuer,
        audience: AUDIENCE,
        jwksUrl: `${idp.issuer}/jwks`,
        customerClaim: 'https://portico.test/customer',
      },
    },
  });
  await gateway.waitForLog('gateway listening', 20_000);
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
  await idp?.stop();
  for (const auth of authenticators) auth.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await insecureLocalAgent.close();
});

function callGateway(path: string, token: string) {
  return request(`https://localhost:${gateway.port}${path}`, {
    headers: { authorization: `Bearer ${token}` },
    dispatcher: insecureLocalAgent,
  });
}

describe('an external identity provider, end to end', () => {
  it('issues RFC 9068 access tokens (typ at+jwt) through the client-credentials grant', async () => {
    const token = await tokenFor('client-url');
    expect(decodeProtectedHeader(token).typ).toBe('at+jwt');
  });

  it('the gateway says at start which issuer it trusts', async () => {
    const line = await gateway.waitForLog('trusting access tokens of the configured issuer');
    expect(line).toMatchObject({
      issuer: idp.issuer,
      audience: AUDIENCE,
      keys: `${idp.issuer}/jwks`,
      customerClaim: 'https://portico.test/customer',
    });
    expect(gateway.logs.some((l) => String(l['msg']).includes('development issuer'))).toBe(false);
  });

  it('accepts its token with the customer from a URL-named claim, and asserts it upstream', async () => {
    const token = await tokenFor('client-url', 'orders:read invoices:read');
    const response = await callGateway('/v1/orders?limit=1', token);
    expect(response.statusCode).toBe(200);
    await response.body.text();
    const seen = upstream.records.at(-1)!;
    expect(seen.headers['authorization']).toBeUndefined();
    const keys = loadAssertionKeys({}, join(dirname(gateway.configFile), 'data'));
    const assertion = verifyAssertion(keys, seen.headers[IDENTITY_HEADER] as string, {
      method: 'GET',
      target: '/v1/orders?limit=1',
    });
    expect(assertion).toMatchObject({
      ok: true,
      claims: { sub: 'client-url', cid: 'cust-url', scp: ['orders:read', 'invoices:read'], amr: 'jwt' },
    });
  });

  it('refuses a token that lacks the configured claim with 401 naming it', async () => {
    const token = await tokenFor('client-plain');
    const response = await callGateway('/v1/orders', token);
    expect(response.statusCode).toBe(401);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(String(response.headers['www-authenticate'])).toMatch(/error="invalid_token"/);
    expect(await response.body.text()).toContain('https://portico.test/customer');
  });
});

describe('claim mapping, against the same provider', () => {
  function authenticator(jwt: Record<string, unknown>) {
    const dir = mkdtempSync(join(tmpdir(), 'portico-idp-'));
    dirs.push(dir);
    const { config } = parseConfig({
      auth: { jwt: { issuer: idp.issuer, audience: AUDIENCE, jwksUrl: `${idp.issuer}/jwks`, ...jwt } },
    });
    const auth = createAuthenticator(config.auth, { dataDir: dir, logger: pino({ level: 'silent' }) });
    authenticators.push(auth);
    return (token: string) => auth.authenticate({ authorization: `Bearer ${token}` }, '/v1/orders');
  }

  it('reads a customer nested in an object by its dotted path', async () => {
    const verify = authenticator({ customerClaim: 'ext.customer_id' });
    const outcome = await verify(await tokenFor('client-nested', 'orders:write'));
    expect(outcome).toMatchObject({
      ok: true,
      principal: { subject: 'client-nested', customerId: 'cust-nested', scopes: ['orders:write'] },
    });
  });

  it('a path that leads to an object, not a string, is refused', async () => {
    const verify = authenticator({ customerClaim: 'ext' });
    const outcome = await verify(await tokenFor('client-nested'));
    expect(outcome).toMatchObject({ ok: false, reason: 'token lacks a valid ext claim' });
  });
});

describe('scopes from scp, and the claim path rules (tokens of our own signing)', () => {
  let privateKey: CryptoKey;
  let verify: (token: string) => ReturnType<ReturnType<typeof createAuthenticator>['authenticate']>;

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    privateKey = pair.privateKey;
    const dir = mkdtempSync(join(tmpdir(), 'portico-scp-'));
    dirs.push(dir);
    const jwksFile = join(dir, 'jwks.json');
    writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1' }] }));
    const { config } = parseConfig({
      auth: {
        jwt: { issuer: 'https://idp.test', audience: AUDIENCE, jwksFile, customerClaim: 'ext.customer' },
      },
    });
    const auth = createAuthenticator(config.auth, { dataDir: dir, logger: pino({ level: 'silent' }) });
    authenticators.push(auth);
    verify = (token) => auth.authenticate({ authorization: `Bearer ${token}` }, '/v1/orders');
  });

  const sign = (claims: Record<string, unknown>) =>
    new SignJWT({ sub: 'svc', ...claims })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'k1' })
      .setIssuer('https://idp.test')
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);

  it('takes scopes from an scp array when there is no scope claim', async () => {
    const outcome = await verify(
      await sign({ ext: { customer: 'c1' }, scp: ['orders:read', 'invoices:read'] }),
    );
    expect(outcome).toMatchObject({ ok: true, principal: { scopes: ['orders:read', 'invoices:read'] } });
  });

  it('prefers scope to scp, and refuses an scp that is not a list of scope names', async () => {
    const both = await verify(await sign({ ext: { customer: 'c1' }, scope: 'orders:read', scp: ['admin'] }));
    expect(both).toMatchObject({ ok: true, principal: { scopes: ['orders:read'] } });
    const bad = await verify(await sign({ ext: { customer: 'c1' }, scp: [1, 'admin'] }));
    expect(bad).toMatchObject({ ok: false, reason: 'malformed scope claim' });
  });

  it('a claim named with the dots in it wins over the path', async () => {
    const outcome = await verify(await sign({ 'ext.customer': 'flat', ext: { customer: 'nested' } }));
    expect(outcome).toMatchObject({ ok: true, principal: { customerId: 'flat' } });
  });

  it('never walks into inherited properties', async () => {
    const outcome = await verify(await sign({ ext: JSON.parse('{"__proto__":{"customer":"c9"}}') }));
    expect(outcome).toMatchObject({ ok: false, reason: 'token lacks a valid ext.customer claim' });
  });
});
