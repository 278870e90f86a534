/**
 * The authenticator's edges: what is answered when nothing, something unsupported, or a
 * credential in the URL is sent; scope checks; the zero-config development issuer; the config
 * rules that keep a deployment from trusting the wrong keys.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAuthenticator, requireScopes } from '../../../gateway/identity/authenticate.ts';
import { checkAuthConfig } from '../../../gateway/config/schema/identity.ts';
import { DEV_AUDIENCE, DEV_ISSUER, loadOrCreateDevIssuer } from '../../../gateway/identity/dev-issuer.ts';
import type { Principal } from '../../../shared/principal.ts';
import {
  authConfig,
  expectInvalidToken,
  expectPrincipal,
  memoryLogger,
  tempDir,
} from './support/fixtures.ts';

function devGateway(dataDir = tempDir('dev')) {
  const log = memoryLogger();
  const auth = createAuthenticator(authConfig(), { dataDir, logger: log.logger, env: {} });
  return { auth, log, dataDir };
}

describe('without credentials', () => {
  it('answers 401 with a bare Bearer challenge (no error code, RFC 6750 §3.1)', async () => {
    const { auth } = devGateway();
    for (const headers of [{}, { authorization: '' }, { authorization: '   ' }]) {
      const outcome = await auth.authenticate(headers, '/v1/orders');
      expect(outcome.ok).toBe(false);
      if (outcome.ok) continue;
      expect(outcome.problem.code).toBe('ERR_UNAUTHENTICATED');
      expect(outcome.problem.status).toBe(401);
      expect(outcome.problem.headers).toEqual({ 'www-authenticate': 'Bearer realm="portico"' });
    }
    auth.close();
  });
});

describe('unsupported or malformed credentials', () => {
  it('answer 401 invalid_token', async () => {
    const { auth } = devGateway();
    const cases: [string, RegExp][] = [
      ['Basic dXNlcjpwYXNz', /unsupported authorization scheme/],
      ['Bearer', /malformed Authorization header/],
      ['Bearer a b', /malformed Authorization header/],
      ['Bearer abc', /malformed token/],
      ['ApiKey abc', /malformed API key/],
    ];
    for (const [authorization, reason] of cases) {
      expectInvalidToken(await auth.authenticate({ authorization }, '/'), reason);
    }
    auth.close();
  });
});

describe('credentials in the URL', () => {
  it('are refused with 400, even beside a valid header, and the value is never echoed', async () => {
    const { auth, dataDir } = devGateway();
    const token = await loadOrCreateDevIssuer(dataDir).sign({ sub: 's', customer_id: 'c1' }, 60);
    for (const name of [
      'access_token',
      'api_key',
      'apikey',
      'key',
      'token',
      'ACCESS_TOKEN',
      'access%5Ftoken',
    ]) {
      const outcome = await auth.authenticate(
        { authorization: `Bearer ${token}` },
        `/v1/orders?limit=5&${name}=s3cr3t`,
      );
      expect(outcome.ok).toBe(false);
      if (outcome.ok) continue;
      expect(outcome.problem.code).toBe('ERR_CREDENTIAL_IN_URL');
      expect(outcome.problem.status).toBe(400);
      expect(JSON.stringify(outcome.problem.toDocument())).not.toContain('s3cr3t');
    }
    // A parameter merely containing such a word is fine.
    expectPrincipal(
      await auth.authenticate({ authorization: `Bearer ${token}` }, '/v1/orders?monkey=1&tokens=2'),
    );
    auth.close();
  });
});

describe('knownBearer (the synchronous path for a token verified before)', () => {
  it('knows only the exact token authenticate() verified, spelled `Bearer <token>`, with no query', async () => {
    const { auth, dataDir } = devGateway();
    const token = await loadOrCreateDevIssuer(dataDir).sign({ sub: 's', customer_id: 'c1' }, 60);
    const headers = { authorization: `Bearer ${token}` };
    // Never judged yet: nothing is known, the full path decides.
    expect(auth.knownBearer(headers, '/v1/orders')).toBeUndefined();
    expectPrincipal(await auth.authenticate(headers, '/v1/orders'));
    expect(auth.knownBearer(headers, '/v1/orders')).toMatchObject({ subject: 's', customerId: 'c1' });
    expect(auth.knownBearer({ authorization: `bearer ${token}` }, '/v1/orders')).toMatchObject({
      subject: 's',
    });
    // A query may carry a credential (400 on the full path); other spellings are parsed there.
    expect(auth.knownBearer(headers, '/v1/orders?token=x')).toBeUndefined();
    expect(auth.knownBearer(headers, '/v1/orders?limit=5')).toBeUndefined();
    for (const authorization of [
      `Bearer  ${token}`,
      `Bearer ${token} `,
      ` Bearer ${token}`,
      `ApiKey ${token}`,
      token,
    ])
      expect(auth.knownBearer({ authorization }, '/v1/orders')).toBeUndefined();
    expect(auth.knownBearer({}, '/v1/orders')).toBeUndefined();
    // Beside a known token, a credential in the URL is still refused by the full path.
    const outcome = await auth.authenticate(headers, '/v1/orders?access_token=s3cr3t');
    expect(outcome.ok ? undefined : outcome.problem.code).toBe('ERR_CREDENTIAL_IN_URL');
    auth.close();
  });
});

describe('the token binding (cnf) of a JWT', () => {
  const jkt = 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs';

  it('reaches the principal as the token states it: a DPoP key or a certificate thumbprint', async () => {
    const { auth, dataDir } = devGateway();
    const issuer = loadOrCreateDevIssuer(dataDir);
    // The connection presented the certificate of thumbprint `jkt` (any 43 characters will do).
    const sender = { method: 'GET', htu: undefined, certificateThumbprint: () => jkt, binding: undefined };
    const bearer = async (claims: Record<string, unknown>) =>
      auth.authenticate(
        { authorization: `Bearer ${await issuer.sign(claims, 60)}` },
        '/v1/orders',
        undefined,
        sender,
      );
    // A DPoP-bound token comes with its proof, never as Bearer (RFC 9449 §7.2; dpop.test.ts).
    const dpop = await bearer({ sub: 's', customer_id: 'c1', cnf: { jkt } });
    expect(dpop.ok ? 'accepted' : dpop.reason).toBe('DPoP-bound token sent as Bearer');
    const mtls = expectPrincipal(await bearer({ sub: 's', customer_id: 'c1', cnf: { 'x5t#S256': jkt } }));
    expect(mtls.principal.cnf).toEqual({ 'x5t#S256': jkt });
    const plain = expectPrincipal(await bearer({ sub: 's', customer_id: 'c1' }));
    expect(plain.principal).not.toHaveProperty('cnf');
    auth.close();
  });

  it('a cnf that is malformed, or binds by a method not checked here, is refused (never taken as unbound)', async () => {
    const { auth, dataDir } = devGateway();
    const issuer = loadOrCreateDevIssuer(dataDir);
    const bearer = async (cnf: unknown) =>
      auth.authenticate(
        { authorization: `Bearer ${await issuer.sign({ sub: 's', customer_id: 'c1', cnf }, 60)}` },
        '/v1/orders',
      );
    for (const cnf of ['x', [jkt], { jkt: 7 }, { jkt: 'short' }, { jkt, 'x5t#S256': 'bad' }])
      expectInvalidToken(await bearer(cnf), 'malformed cnf claim');
    for (const cnf of [{}, { jwk: { kty: 'EC' } }, { kid: 'k1' }])
      expectInvalidToken(await bearer(cnf), 'unsupported cnf confirmation method');
    auth.close();
  });
});

describe('requireScopes', () => {
  const principal = (scopes: string[]): Principal => ({
    subject: 's',
    customerId: 'c',
    scopes,
    authMethod: 'jwt',
  });

  it('passes when every scope is held, and admin implies all', () => {
    expect(requireScopes(principal(['orders:read', 'orders:write']), ['orders:write'])).toBeUndefined();
    expect(requireScopes(principal(['admin']), ['payments:write', 'orders:read'])).toBeUndefined();
  });

  it('answers 403 insufficient_scope naming the missing scope', () => {
    const problem = requireScopes(principal(['orders:read']), ['orders:read', 'payments:write']);
    expect(problem?.code).toBe('ERR_INSUFFICIENT_SCOPE');
    expect(problem?.status).toBe(403);
    expect(problem?.headers['www-authenticate']).toBe(
      'Bearer realm="portico", error="insufficient_scope", scope="orders:read payments:write", error_description="requires scope payments:write"',
    );
    expect(problem?.detail).toContain('payments:write');
  });
});

describe('the development issuer (zero config)', () => {
  it('creates its key pair once, private key mode 0600, and its tokens are accepted', async () => {
    const { auth, dataDir, log } = devGateway();
    const privateFile = join(dataDir, 'dev-issuer', 'private.jwk.json');
    expect(statSync(privateFile).mode & 0o777).toBe(0o600);
    const before = readFileSync(privateFile, 'utf8');
    const issuer = loadOrCreateDevIssuer(dataDir);
    expect(readFileSync(privateFile, 'utf8')).toBe(before);
    expect(issuer.jwks.keys[0]).not.toHaveProperty('d');
    expect(JSON.parse(readFileSync(join(dataDir, 'dev-issuer', 'jwks.json'), 'utf8'))).toEqual(issuer.jwks);

    const token = await issuer.sign({ sub: 'dev', customer_id: 'cust-7', scope: 'orders:read' }, 60);
    const outcome = expectPrincipal(await auth.authenticate({ authorization: `Bearer ${token}` }, '/'));
    expect(outcome.principal.customerId).toBe('cust-7');
    expect(log.lines()).toMatch(/trusting the development issuer/);
    auth.close();
  });

  it('tokens of another data dir’s development issuer are refused', async () => {
    const { auth } = devGateway();
    const stranger = loadOrCreateDevIssuer(tempDir('other'));
    const token = await stranger.sign({ sub: 'dev', customer_id: 'cust-7' }, 60);
    expectInvalidToken(await auth.authenticate({ authorization: `Bearer ${token}` }, '/'));
    auth.close();
  });

  it('a JWKS file can stand in for a URL', async () => {
    const dataDir = tempDir('file');
    const issuer = loadOrCreateDevIssuer(dataDir);
    const jwksFile = join(dataDir, 'keys.json');
    writeFileSync(jwksFile, JSON.stringify(issuer.jwks));
    const auth = createAuthenticator(
      authConfig({ jwt: { issuer: DEV_ISSUER, audience: DEV_AUDIENCE, jwksFile } }),
      { dataDir: tempDir('file-gw'), logger: memoryLogger().logger, env: {} },
    );
    const token = await issuer.sign({ sub: 'x', customer_id: 'cust-8' }, 60);
    expectPrincipal(await auth.authenticate({ authorization: `Bearer ${token}` }, '/'));
    auth.close();
  });
});

describe('auth config', () => {
  it('fills defaults from the schema', () => {
    expect(authConfig().jwt).toEqual({
      algorithms: ['ES256', 'RS256', 'EdDSA', 'PS256'],
      clockSkewSeconds: 30,
      maxLifetimeSeconds: 86400,
      maxTokenBytes: 8192,
      customerClaim: 'customer_id',
      staleKeysMaxAgeSeconds: 3600,
      refetchCooldownSeconds: 30,
      cacheMaxEntries: 10000,
    });
    expect(authConfig().apiKeys).toEqual({ enabled: true });
  });

  it('refuses symmetric or none algorithms, and a skew above 300 s', () => {
    expect(() => authConfig({ jwt: { algorithms: ['HS256'] } })).toThrow();
    expect(() => authConfig({ jwt: { algorithms: ['none'] } })).toThrow();
    expect(() => authConfig({ jwt: { clockSkewSeconds: 301 } })).toThrow();
    expect(() => authConfig({ jwt: { maxLifetimeSeconds: 59 } })).toThrow();
  });

  it('refuses a plain-http JWKS URL, both sources at once, and a URL without issuer/audience', () => {
    const base = { issuer: 'https://i', audience: 'a' };
    expect(checkAuthConfig(authConfig({ jwt: { ...base, jwksUrl: 'http://idp.example/jwks' } }))).toEqual([
      '/auth/jwt/jwksUrl: must be https (http only for loopback hosts)',
    ]);
    expect(checkAuthConfig(authConfig({ jwt: { ...base, jwksUrl: 'http://127.0.0.1:8080/jwks' } }))).toEqual(
      [],
    );
    expect(
      checkAuthConfig(authConfig({ jwt: { ...base, jwksUrl: 'https://i/jwks', jwksFile: 'k.json' } })),
    ).toHaveLength(1);
    expect(checkAuthConfig(authConfig({ jwt: { jwksUrl: 'https://i/jwks' } }))).toHaveLength(2);
    expect(() =>
      createAuthenticator(authConfig({ jwt: { jwksUrl: 'https://i/jwks' } }), {
        dataDir: tempDir('cfg'),
        logger: memoryLogger().logger,
      }),
    ).toThrow(/issuer: required/);
  });
});
