/**
 * The attacker's checklist for access tokens (RFC 8725), each answered 401 invalid_token.
 * Tokens are real (jose, generated keys); keys come from a real JWKS endpoint over HTTPS whose
 * requests are counted, so "no outbound request" is asserted, not assumed.
 */
import { KeyObject, createHmac, createPublicKey, sign as cryptoSign } from 'node:crypto';
import {
  SignJWT,
  exportJWK,
  generateKeyPair,
  type CryptoKey,
  type JWK,
  type JWTHeaderParameters,
  type JWTPayload,
} from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthenticator, type Authenticator } from '../../../gateway/identity/authenticate.ts';
import {
  authConfig,
  expectInvalidToken,
  expectPrincipal,
  memoryLogger,
  tempDir,
  testClock,
} from './support/fixtures.ts';
import { createTrustingFetch, startBystander, startJwksServer, type JwksServer } from './support/servers.ts';

const ISSUER = 'https://issuer.portico.test';
const AUDIENCE = 'portico';
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

let jwks: JwksServer;
let bystander: Awaited<ReturnType<typeof startBystander>>;
let ecKey: { privateKey: CryptoKey; publicJwk: JWK };
let auth: Authenticator;
let trustingFetch: Awaited<ReturnType<typeof createTrustingFetch>>['fetch'];
const clock = testClock();
const log = memoryLogger();

async function keyPair(alg: string, kid: string) {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** The same key without its `kid` (the header's own `jwk` needs no id to be tried). */
function withoutKid(jwk: JWK): JWK {
  const rest = { ...jwk };
  delete rest.kid;
  return rest;
}

function claims(overrides: JWTPayload = {}): JWTPayload {
  const now = Math.floor(clock.now() / 1000);
  return {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'client-1',
    client_id: 'client-1',
    customer_id: 'cust-1',
    scope: 'orders:read orders:write',
    iat: now,
    exp: now + 300,
    jti: `t-${Math.random()}`,
    ...overrides,
  };
}

function sign(
  payload: JWTPayload = claims(),
  header: Partial<JWTHeaderParameters> = {},
  key: CryptoKey = ecKey.privateKey,
): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'ec-1', ...header })
    .sign(key);
}

/** Signs what jose's own signer refuses to produce (unknown crit extensions). */
function signRaw(header: Record<string, unknown>, payload: JWTPayload, key: CryptoKey): string {
  const input = `${b64(header)}.${b64(payload)}`;
  const signature = cryptoSign('sha256', Buffer.from(input), {
    key: KeyObject.from(key),
    dsaEncoding: 'ieee-p1363',
  });
  return `${input}.${signature.toString('base64url')}`;
}

const bearer = (token: string) => auth.authenticate({ authorization: `Bearer ${token}` }, '/v1/orders');

beforeAll(async () => {
  ecKey = await keyPair('ES256', 'ec-1');
  const rsa = await keyPair('RS256', 'rsa-1');
  const { cert, fetch } = await createTrustingFetch();
  trustingFetch = fetch;
  jwks = await startJwksServer(cert, { keys: [ecKey.publicJwk, rsa.publicJwk] });
  bystander = await startBystander();
  auth = createAuthenticator(authConfig({ jwt: { issuer: ISSUER, audience: AUDIENCE, jwksUrl: jwks.url } }), {
    dataDir: tempDir('jwt'),
    logger: log.logger,
    fetch,
    now: clock.now,
  });
});

afterAll(async () => {
  auth.close();
  await jwks.close();
  await bystander.close();
});

describe('a well-formed token (the control: every attack below differs from it in one way)', () => {
  it('is accepted and mapped to a principal, then served from the cache', async () => {
    const token = await sign();
    const first = expectPrincipal(await bearer(token));
    expect(first.principal).toEqual({
      subject: 'client-1',
      customerId: 'cust-1',
      scopes: ['orders:read', 'orders:write'],
      authMethod: 'jwt',
    });
    expect(first.cacheHit).toBe(false);
    expect(expectPrincipal(await bearer(token)).cacheHit).toBe(true);
    expect(auth.ready()).toBe(true);
  });

  it('accepts typ application/at+jwt and an exp within the clock skew', async () => {
    const now = Math.floor(clock.now() / 1000);
    expectPrincipal(await bearer(await sign(claims(), { typ: 'application/at+jwt' })));
    expectPrincipal(await bearer(await sign(claims({ iat: now - 100, exp: now - 10 }))));
  });
});

describe('the attacker’s checklist', () => {
  it('alg none is refused, with or without a signature part', async () => {
    const unsigned = `${b64({ alg: 'none', typ: 'at+jwt', kid: 'ec-1' })}.${b64(claims())}`;
    expectInvalidToken(await bearer(`${unsigned}.`), /malformed/);
    expectInvalidToken(await bearer(`${unsigned}.AAAA`), /algorithm not allowed/);
  });

  it('HS256 signed with the public key as the HMAC secret is refused', async () => {
    const pem = createPublicKey({ key: ecKey.publicJwk, format: 'jwk' }).export({
      type: 'spki',
      format: 'pem',
    });
    for (const secret of [pem, JSON.stringify(ecKey.publicJwk)]) {
      const input = `${b64({ alg: 'HS256', typ: 'at+jwt', kid: 'ec-1' })}.${b64(claims())}`;
      const token = `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
      expectInvalidToken(await bearer(token), /algorithm not allowed/);
    }
  });

  it('an expired token is refused (past exp beyond the skew)', async () => {
    const now = Math.floor(clock.now() / 1000);
    expectInvalidToken(await bearer(await sign(claims({ iat: now - 600, exp: now - 31 }))), /expired/);
  });

  it('nbf and iat in the future are refused', async () => {
    const now = Math.floor(clock.now() / 1000);
    expectInvalidToken(await bearer(await sign(claims({ nbf: now + 120 }))), /not yet valid/);
    expectInvalidToken(await bearer(await sign(claims({ iat: now + 120, exp: now + 600 }))), /future/);
  });

  it('a token that lives longer than auth.jwt.maxLifetimeSeconds (a day by default) is refused', async () => {
    const now = Math.floor(clock.now() / 1000);
    // A stolen token that never expires: exp = 10^12 (the year 33658).
    expectInvalidToken(await bearer(await sign(claims({ exp: 1e12 }))), /lifetime/);
    // Backdating iat does not help: the lifetime is exp - iat.
    expectInvalidToken(await bearer(await sign(claims({ iat: now - 86_000, exp: now + 401 }))), /lifetime/);
    // A day exactly is allowed (`npm run -s token -- --ttl 86400`).
    expectPrincipal(await bearer(await sign(claims({ exp: now + 86_400 }))));
    const strict = createAuthenticator(
      authConfig({ jwt: { issuer: ISSUER, audience: AUDIENCE, jwksUrl: jwks.url, maxLifetimeSeconds: 600 } }),
      { dataDir: tempDir('jwt'), logger: log.logger, fetch: trustingFetch, now: clock.now },
    );
    try {
      const token = await sign(claims({ exp: now + 601 }));
      expectInvalidToken(
        await strict.authenticate({ authorization: `Bearer ${token}` }, '/v1/orders'),
        /lifetime/,
      );
      expectPrincipal(await strict.authenticate({ authorization: `Bearer ${await sign()}` }, '/v1/orders'));
    } finally {
      strict.close();
    }
  });

  it('scopes Portico does not know are not granted (dropped from the principal)', async () => {
    const token = await sign(claims({ scope: 'orders:read superuser orders:* admin:all' }));
    expect(expectPrincipal(await bearer(token)).principal.scopes).toEqual(['orders:read']);
    const array = await sign(claims({ scope: undefined, scp: ['invoices:read', 'root'] }));
    expect(expectPrincipal(await bearer(array)).principal.scopes).toEqual(['invoices:read']);
  });

  it('a wrong issuer or audience is refused', async () => {
    expectInvalidToken(await bearer(await sign(claims({ iss: 'https://evil.example' }))), /issuer/);
    expectInvalidToken(await bearer(await sign(claims({ aud: 'another-api' }))), /audience/);
  });

  it('typ missing or JWT is refused (an ID token is not an access token)', async () => {
    const noTyp = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'ES256', kid: 'ec-1' })
      .sign(ecKey.privateKey);
    expectInvalidToken(await bearer(noTyp), /at\+jwt/);
    expectInvalidToken(await bearer(await sign(claims(), { typ: 'JWT' })), /at\+jwt/);
  });

  it('an unknown kid is refused, refetching the JWKS at most once per cooldown', async () => {
    const stranger = await keyPair('ES256', 'ghost');
    const before = jwks.requests;
    clock.advance(31_000); // past the cooldown since the first fetch
    expectInvalidToken(
      await bearer(await sign(claims(), { kid: 'ghost' }, stranger.privateKey)),
      /unknown signing key/,
    );
    expect(jwks.requests).toBe(before + 1);
    expectInvalidToken(
      await bearer(await sign(claims(), { kid: 'ghost-2' }, stranger.privateKey)),
      /unknown/,
    );
    expect(jwks.requests).toBe(before + 1);
  });

  it('the same kid with another key is refused', async () => {
    const impostor = await keyPair('ES256', 'ec-1');
    expectInvalidToken(await bearer(await sign(claims(), {}, impostor.privateKey)), /signature/);
  });

  it('tells the client the same thing whichever key, signature, issuer or audience check failed', async () => {
    const stranger = await keyPair('ES256', 'ghost-3');
    const impostor = await keyPair('ES256', 'ec-1');
    const refusals = [
      await bearer(await sign(claims(), { kid: 'ghost-3' }, stranger.privateKey)),
      await bearer(await sign(claims(), {}, impostor.privateKey)),
      await bearer(await sign(claims({ iss: 'https://elsewhere.example' }))),
      await bearer(await sign(claims({ aud: 'someone-else' }))),
    ];
    // The reasons differ, for the log and the audit record; the answers do not.
    expect(new Set(refusals.map((outcome) => expectInvalidToken(outcome))).size).toBe(4);
    const answers = refusals.map((outcome) =>
      outcome.ok ? undefined : [outcome.problem.detail, outcome.problem.headers['www-authenticate']],
    );
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    expect(JSON.stringify(answers[0])).not.toMatch(/key|signature|issuer|audience/);
    // An expired token still says so: the client can read exp itself, and must refresh.
    const now = Math.floor(clock.now() / 1000);
    const expired = await bearer(await sign(claims({ iat: now - 600, exp: now - 300 })));
    expect(expired.ok ? '' : expired.problem.headers['www-authenticate']).toMatch(/expired/);
  });

  it('a tampered payload is refused', async () => {
    const [header, , signature] = (await sign()).split('.');
    const forged = `${header}.${b64(claims({ customer_id: 'cust-2', scope: 'admin' }))}.${signature}`;
    expectInvalidToken(await bearer(forged), /signature/);
  });

  it('an unknown critical header is refused', async () => {
    const header = { alg: 'ES256', typ: 'at+jwt', kid: 'ec-1', crit: ['urn:example:must-understand'] };
    const token = signRaw({ ...header, 'urn:example:must-understand': true }, claims(), ecKey.privateKey);
    // Same signer without crit: proves the refusal is about crit, not a bad signature.
    expectPrincipal(
      await bearer(signRaw({ alg: 'ES256', typ: 'at+jwt', kid: 'ec-1' }, claims(), ecKey.privateKey)),
    );
    expectInvalidToken(await bearer(token), /critical/);
  });

  it('jku, x5u and an embedded jwk are refused without any outbound request', async () => {
    const attacker = await keyPair('ES256', 'attacker');
    const fetchesBefore = jwks.requests;
    const headers: Partial<JWTHeaderParameters>[] = [
      { kid: 'attacker', jku: `${bystander.url}/jwks.json` },
      { kid: 'attacker', x5u: `${bystander.url}/cert.pem` },
      { kid: 'attacker', jwk: attacker.publicJwk },
      { jwk: withoutKid(attacker.publicJwk) },
    ];
    for (const header of headers) {
      expectInvalidToken(
        await bearer(await sign(claims(), header, attacker.privateKey)),
        /names its own key/,
      );
    }
    // Also with a kid we know: the key reference alone is enough to refuse.
    expectInvalidToken(
      await bearer(await sign(claims(), { jku: `${bystander.url}/jwks.json` })),
      /names its own key/,
    );
    expect(bystander.received).toHaveLength(0);
    expect(jwks.requests).toBe(fetchesBefore);
  });

  it('an oversized token is refused before parsing', async () => {
    const token = await sign(claims({ padding: 'x'.repeat(9000) }));
    expect(token.length).toBeGreaterThan(8192);
    expectInvalidToken(await bearer(token), /too large/);
  });

  it('a token without exp, or without the customer claim, is refused', async () => {
    const noExp = claims();
    delete noExp.exp;
    expectInvalidToken(await bearer(await sign(noExp)), /exp/);
    const noCustomer = claims();
    delete noCustomer['customer_id'];
    expectInvalidToken(await bearer(await sign(noCustomer)), /customer_id/);
    expectInvalidToken(await bearer(await sign(claims({ customer_id: '../etc' }))), /customer_id/);
  });

  it('garbage is refused without leaking it into the challenge', async () => {
    const reason = expectInvalidToken(await bearer('not"a\\token'), /malformed/);
    expect(reason).not.toContain('token"');
  });
});

describe('the verified-token cache', () => {
  /** P-256's group order: (r, n - s) verifies wherever (r, s) does. */
  const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
  const parts = (token: string) => token.split('.') as [string, string, string];
  /** The other S of the same signature: low-S for high-S and back. */
  function otherS(token: string): string {
    const [header, payload, signature] = parts(token);
    const bytes = Buffer.from(signature, 'base64url');
    const s = BigInt(`0x${bytes.subarray(32).toString('hex')}`);
    const flipped = Buffer.from((P256_N - s).toString(16).padStart(64, '0'), 'hex');
    return `${header}.${payload}.${Buffer.concat([bytes.subarray(0, 32), flipped]).toString('base64url')}`;
  }
  /** The same bytes with a padding bit of the last base64url character set (64 bytes: 4 spare bits). */
  function repadded(segment: string): string {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(segment.at(-1)!);
    return segment.slice(0, -1) + alphabet[last ^ 1]!;
  }

  it('refuses a signature, header or payload spelt with non-zero padding bits (one token, one spelling)', async () => {
    const token = await sign();
    expectPrincipal(await bearer(token));
    const [header, payload, signature] = parts(token);
    expect(Buffer.from(repadded(signature), 'base64url')).toEqual(Buffer.from(signature, 'base64url'));
    expectInvalidToken(await bearer(`${header}.${payload}.${repadded(signature)}`), /encoding/);
    for (const respelt of [header, payload].filter((segment) => segment.length % 4 !== 0)) {
      const variant = token.replace(respelt, repadded(respelt));
      if (Buffer.from(repadded(respelt), 'base64url').equals(Buffer.from(respelt, 'base64url')))
        expectInvalidToken(await bearer(variant), /encoding/);
    }
  });

  it('serves the other S of a verified ES256 signature from the cache, without verifying it again', async () => {
    const token = await sign();
    expect(expectPrincipal(await bearer(token)).cacheHit).toBe(false);
    const malleated = otherS(token);
    expect(malleated).not.toBe(token);
    const again = expectPrincipal(await bearer(malleated));
    expect(again.principal).toEqual(expectPrincipal(await bearer(token)).principal);
    expect(again.cacheHit).toBe(true);
    // And the other way round, for an issuer whose signature was the high one.
    const second = await sign();
    expect(expectPrincipal(await bearer(otherS(second))).cacheHit).toBe(false);
    expect(expectPrincipal(await bearer(second)).cacheHit).toBe(true);
  });

  it('never serves a token past its exp', async () => {
    const now = Math.floor(clock.now() / 1000);
    const token = await sign(claims({ exp: now + 60 }));
    expectPrincipal(await bearer(token));
    expect(expectPrincipal(await bearer(token)).cacheHit).toBe(true);
    clock.advance(60_000);
    // exp reached: the cache lets go; only the skew (30 s) still admits it, through a full verify.
    expect(expectPrincipal(await bearer(token)).cacheHit).toBe(false);
    clock.advance(31_000);
    expectInvalidToken(await bearer(token), /expired/);
  });

  it('drops tokens whose key left the key set', async () => {
    const now = Math.floor(clock.now() / 1000);
    const token = await sign(claims({ exp: now + 3600 }));
    expectPrincipal(await bearer(token));
    expect(expectPrincipal(await bearer(token)).cacheHit).toBe(true);
    const saved = jwks.jwks;
    jwks.jwks = { keys: saved.keys.filter((key) => key.kid !== 'ec-1') };
    const fetchesBefore = jwks.requests;
    clock.advance(6 * 60_000); // keys due for refresh: the next lookup refreshes them in the background
    await bearer(token);
    await expect.poll(() => jwks.requests).toBe(fetchesBefore + 1);
    await expect.poll(async () => (await bearer(token)).ok).toBe(false);
    expectInvalidToken(await bearer(token), /unknown signing key/);
    jwks.jwks = saved;
  });

  it('never logs a token', () => {
    expect(log.lines()).not.toMatch(/eyJ/);
  });
});
