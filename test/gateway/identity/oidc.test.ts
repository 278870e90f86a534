/**
 * Against a real OAuth 2.0 authorization server (oidc-provider, over HTTPS, in-process)
 * issuing client-credentials RFC 9068 access tokens: acceptance, key rotation, an identity
 * provider outage, and keys that were never loaded. Time moves by an injected clock.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAuthenticator, type Authenticator } from '../../../gateway/identity/authenticate.ts';
import { AUDIENCE, startOidcIssuer, type OidcIssuer } from './support/oidc-issuer.ts';
import {
  authConfig,
  expectInvalidToken,
  expectPrincipal,
  memoryLogger,
  tempDir,
  testClock,
} from './support/fixtures.ts';
import { createTrustingFetch } from './support/servers.ts';
import type { JwksFetch } from '../../../gateway/identity/key-source.ts';

let idp: OidcIssuer;
let fetch: JwksFetch;
const open: Authenticator[] = [];

beforeAll(async () => {
  const trusting = await createTrustingFetch();
  fetch = trusting.fetch;
  idp = await startOidcIssuer(trusting.cert, trusting.agent);
});

afterEach(() => {
  for (const auth of open.splice(0)) auth.close();
  idp.down = false;
});

afterAll(async () => {
  await idp.close();
});

function gateway(options: { jwt?: Record<string, unknown>; fetch?: JwksFetch; now?: () => number } = {}) {
  const log = memoryLogger();
  const auth = createAuthenticator(
    authConfig({ jwt: { issuer: idp.issuer, audience: AUDIENCE, jwksUrl: idp.jwksUrl, ...options.jwt } }),
    {
      dataDir: tempDir('oidc'),
      logger: log.logger,
      fetch: options.fetch ?? fetch,
      ...(options.now === undefined ? {} : { now: options.now }),
    },
  );
  open.push(auth);
  return {
    auth,
    log,
    bearer: (token: string) => auth.authenticate({ authorization: `Bearer ${token}` }, '/v1/orders'),
  };
}

describe('client-credentials tokens from a real authorization server', () => {
  it('are accepted and mapped: sub, customer claim, scope', async () => {
    const { bearer } = gateway();
    const token = await idp.token('client-a', 'orders:read invoices:read');
    const outcome = expectPrincipal(await bearer(token));
    expect(outcome.principal).toEqual({
      subject: 'client-a',
      customerId: 'cust-a',
      scopes: ['orders:read', 'invoices:read'],
      authMethod: 'jwt',
    });
    expect(outcome.cacheHit).toBe(false);
    expect(expectPrincipal(await bearer(token)).cacheHit).toBe(true);
  });

  it('a client registered without a customer gets 401 naming the missing claim', async () => {
    const { bearer } = gateway();
    expectInvalidToken(await bearer(await idp.token('client-nocust')), /customer_id/);
  });

  it('a token for another audience is refused', async () => {
    const { bearer } = gateway({ jwt: { audience: 'https://other.api.test' } });
    expectInvalidToken(await bearer(await idp.token('client-a')), /audience/);
  });

  it('the JWKS is fetched over verified TLS: a client that does not trust the certificate loads no keys', async () => {
    const untrusting = createAuthenticator(
      authConfig({ jwt: { issuer: idp.issuer, audience: AUDIENCE, jwksUrl: idp.jwksUrl } }),
      { dataDir: tempDir('oidc'), logger: memoryLogger().logger }, // default fetch: system CAs only
    );
    open.push(untrusting);
    const outcome = await untrusting.authenticate(
      { authorization: `Bearer ${await idp.token('client-a')}` },
      '/',
    );
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.problem.code).toBe('ERR_SERVICE_UNAVAILABLE');
    expect(untrusting.ready()).toBe(false);
  });
});

describe('key rotation at the identity provider', () => {
  it('a token signed by a new key is accepted after one refetch; old tokens keep working', async () => {
    const clock = testClock();
    const { bearer } = gateway({ now: clock.now });
    const oldToken = await idp.token('client-a');
    expectPrincipal(await bearer(oldToken));
    const fetches = idp.jwksRequests;

    const newKid = await idp.rotate();
    const newToken = await idp.token('client-b');
    expect(JSON.parse(Buffer.from(newToken.split('.')[0]!, 'base64url').toString()).kid).toBe(newKid);
    clock.advance(31_000); // past the refetch cooldown
    const outcome = expectPrincipal(await bearer(newToken));
    expect(outcome.principal.customerId).toBe('cust-b');
    expect(idp.jwksRequests).toBe(fetches + 1);
    expectPrincipal(await bearer(oldToken));
  });

  it('within the cooldown an unknown kid is refused without a fetch', async () => {
    const clock = testClock();
    const { bearer, auth } = gateway({ now: clock.now });
    await expect.poll(() => auth.ready()).toBe(true);
    const fetches = idp.jwksRequests;
    await idp.rotate();
    expectInvalidToken(await bearer(await idp.token('client-a')), /unknown signing key/);
    expect(idp.jwksRequests).toBe(fetches);
  });
});

describe('an identity-provider outage', () => {
  it('keeps the last good keys for staleKeysMaxAgeSeconds, then answers 503, and recovers', async () => {
    const clock = testClock();
    // Cache off: every request below really needs the keys.
    const { bearer, auth, log } = gateway({
      now: clock.now,
      jwt: { staleKeysMaxAgeSeconds: 600, cacheMaxEntries: 0 },
    });
    const token = await idp.token('client-a');
    expectPrincipal(await bearer(token));

    idp.down = true;
    const fetches = idp.jwksRequests;
    clock.advance(6 * 60_000); // keys due for refresh (5 min), refresh fails
    expectPrincipal(await bearer(token));
    await expect.poll(() => log.lines()).toMatch(/JWKS fetch failed/);
    clock.advance(8 * 60_000); // 14 min: within 5 + 10 min
    expectPrincipal(await bearer(token));
    expect(auth.ready()).toBe(true);

    clock.advance(2 * 60_000); // 16 min: past 5 + 10 min
    const outage = await bearer(token);
    expect(outage.ok).toBe(false);
    if (!outage.ok) {
      expect(outage.problem.code).toBe('ERR_SERVICE_UNAVAILABLE');
      expect(outage.problem.status).toBe(503);
    }
    expect(auth.ready()).toBe(false);
    expect(idp.jwksRequests).toBe(fetches); // cut connections are not counted: none reached the handler

    idp.down = false;
    clock.advance(31_000);
    expectPrincipal(await bearer(token));
    expect(auth.ready()).toBe(true);
  });

  it('answers 503 when keys were never loaded', async () => {
    const token = await idp.token('client-a');
    idp.down = true;
    const { bearer, auth } = gateway();
    const outcome = await bearer(token);
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) {
      expect(outcome.problem.code).toBe('ERR_SERVICE_UNAVAILABLE');
      expect(outcome.problem.headers['retry-after']).toBe('5');
      expect(outcome.reason).toMatch(/keys unavailable/);
    }
    expect(auth.ready()).toBe(false);
  });
});
