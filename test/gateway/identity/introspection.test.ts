/**
 * Opaque access tokens against a real authorization server in its own process (oidc-provider
 * with its `introspection` and `revocation` features), through a relay that counts and cuts
 * the gateway's introspection calls. From the attacker's side: a token revoked at the provider,
 * a token minted for another API, a made-up token, the endpoint down, a crowd of first uses.
 * The gateway's clock is injected, so cached answers age without waiting.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { describe, expect, inject, it } from 'vitest';
import { OTHER_AUDIENCE } from './support/idp-audiences.ts';
import { expectInvalidToken, expectPrincipal, tempDir } from './support/fixtures.ts';
import { AUDIENCE, useIntrospectionBench } from './support/introspecting.ts';

const bench = useIntrospectionBench();
const gateway = bench.gateway;

describe('opaque access tokens by introspection', () => {
  it('are accepted and mapped (client as subject, customer claim, scopes), then served from the cache', async () => {
    const { bearer, auth } = gateway();
    const token = await bench.idp.token('opaque-a', { scope: 'orders:read invoices:read' });
    expect(token).not.toContain('.');
    const before = bench.relay.requests;
    const outcome = expectPrincipal(await bearer(token));
    expect(outcome.principal).toEqual({
      subject: 'opaque-a',
      customerId: 'cust-opaque-a',
      scopes: ['orders:read', 'invoices:read'],
      authMethod: 'jwt',
    });
    expect(outcome.cacheHit).toBe(false);
    expect(expectPrincipal(await bearer(token)).cacheHit).toBe(true);
    expect(auth.knownBearer({ authorization: `Bearer ${token}` }, '/v1/orders')).toBe(outcome.principal);
    expect(bench.relay.requests - before).toBe(1);
  });

  it('authenticates the gateway by private_key_jwt as well, the key never logged', async () => {
    const dir = tempDir('introspection-key');
    const keyFile = join(dir, 'gateway-key.json');
    writeFileSync(keyFile, JSON.stringify(bench.idp.gatewayKey), { mode: 0o600 });
    const { bearer, log } = gateway(
      {
        clientId: 'portico-gateway-jwt',
        clientAuth: 'private_key_jwt',
        privateKeyFile: keyFile,
        privateKeyId: 'gw-key-1',
      },
      { env: {} },
    );
    const outcome = expectPrincipal(await bearer(await bench.idp.token('opaque-b')));
    expect(outcome.principal).toMatchObject({ subject: 'opaque-b', customerId: 'cust-opaque-b' });
    expect(log.lines()).not.toContain(String(bench.idp.gatewayKey.d));
  });

  it('a wrong client secret is a 503 (the endpoint refused the gateway), never a 401 nor an allow, and is never logged', async () => {
    const { bearer, log } = gateway(
      {},
      { env: { PORTICO_INTROSPECTION_CLIENT_SECRET: 'wrong-secret-value' } },
    );
    const outcome = await bearer(await bench.idp.token('opaque-a'));
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.problem.status).toBe(503);
    expect(outcome.problem.code).toBe('ERR_SERVICE_UNAVAILABLE');
    expect(log.lines()).toContain("refused the gateway's client authentication");
    expect(log.lines()).not.toContain('wrong-secret-value');
  });
});

describe('attacks on opaque tokens', () => {
  it('a token revoked at the provider works only until its cached answer expires, then is refused', async () => {
    const { bearer, clock } = gateway({ cacheMaxSeconds: 60 });
    const token = await bench.idp.token('opaque-a');
    expectPrincipal(await bearer(token));
    await bench.idp.revoke('opaque-a', token);
    clock.advance(59_000);
    expect(expectPrincipal(await bearer(token)).cacheHit).toBe(true);
    clock.advance(1_000);
    expectInvalidToken(await bearer(token), 'token not active');
  });

  it('a token the provider minted for another API is refused (its answer names another audience)', async () => {
    const { bearer } = gateway();
    const token = await bench.idp.token('opaque-a', { resource: OTHER_AUDIENCE });
    const reason = expectInvalidToken(await bearer(token), 'unexpected audience');
    const outcome = await bearer(token);
    // The client is told nothing it could probe with.
    expect(outcome.ok ? '' : outcome.problem.headers['www-authenticate']).toContain('invalid credential');
    expect(reason).toBe('unexpected audience');
  });

  it('a made-up token is refused, and its inactive answer reused for negativeCacheSeconds', async () => {
    const { bearer, clock } = gateway({ negativeCacheSeconds: 5 });
    const before = bench.relay.requests;
    for (let i = 0; i < 3; i += 1)
      expectInvalidToken(await bearer('made-up-token-0123456789'), 'token not active');
    expect(bench.relay.requests - before).toBe(1);
    clock.advance(5_000);
    expectInvalidToken(await bearer('made-up-token-0123456789'), 'token not active');
    expect(bench.relay.requests - before).toBe(2);
  });

  it('the endpoint down: 503 for a token not yet known, tokens known keep working until their answer expires', async () => {
    const { bearer, clock } = gateway({ cacheMaxSeconds: 30 });
    const known = await bench.idp.token('opaque-a');
    const fresh = await bench.idp.token('opaque-b');
    expectPrincipal(await bearer(known));
    bench.relay.down = true;
    const outcome = await bearer(fresh);
    expect(outcome.ok ? 200 : outcome.problem.status).toBe(503);
    expect(outcome.ok ? undefined : outcome.problem.headers['retry-after']).toBe('5');
    expectPrincipal(await bearer(known));
    clock.advance(30_000);
    const expired = await bearer(known);
    expect(expired.ok ? 200 : expired.problem.status).toBe(503);
  });

  it('many simultaneous first uses of one token make one introspection call', async () => {
    const { bearer } = gateway();
    const token = await bench.idp.token('opaque-b');
    bench.relay.delayMs = 100;
    const before = bench.relay.requests;
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => bearer(token)));
    for (const outcome of outcomes)
      expect(expectPrincipal(outcome).principal.customerId).toBe('cust-opaque-b');
    expect(bench.relay.requests - before).toBe(1);
  });
});

describe('JWTs and opaque tokens of one issuer side by side (acceptJwt)', () => {
  it('a JWT is verified by its signature, without an introspection call; an opaque token is introspected', async () => {
    const { bearer } = gateway(
      { acceptJwt: true },
      { jwt: { issuer: bench.idp.issuer, audience: AUDIENCE, jwksUrl: `${bench.idp.issuer}/jwks` } },
    );
    const before = bench.relay.requests;
    const jwt = await bench.idp.token('client-plain');
    expect(expectPrincipal(await bearer(jwt)).principal.customerId).toBe('cust-plain');
    expect(bench.relay.requests - before).toBe(0);
    expect(expectPrincipal(await bearer(await bench.idp.token('opaque-a'))).principal.customerId).toBe(
      'cust-opaque-a',
    );
    expect(bench.relay.requests - before).toBe(1);
  });

  it('without acceptJwt, a JWT is introspected like any token (and oidc-provider will not introspect one)', async () => {
    const { bearer } = gateway();
    const outcome = await bearer(await bench.idp.token('client-plain'));
    expect(outcome.ok).toBe(false);
  });
});

describe('revocations read from Redis', () => {
  it('fail closed: with Redis unreachable a token not yet known gets 503, a known one still works', async () => {
    const redis = new Redis(inject('redisUrl'), {
      keyPrefix: `${inject('redisPrefix')}introspection-down:`,
      enableOfflineQueue: false,
      commandTimeout: 2000,
    });
    await new Promise((resolve) => redis.once('ready', resolve));
    const { auth, bearer } = gateway({}, { redis });
    const known = await bench.idp.token('opaque-a');
    expectPrincipal(await bearer(known));
    // The revocation listener subscribes on a connection of its own, in the background: a cached
    // answer is taken as it is once the listener hears (revocations.ts), a few ms after start.
    const deadline = performance.now() + 5000;
    while (auth.knownBearer({ authorization: `Bearer ${known}` }, '/v1/orders') === undefined) {
      if (performance.now() > deadline) throw new Error('the revocation listener did not subscribe in 5 s');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    redis.disconnect();
    const outcome = await bearer(await bench.idp.token('opaque-b'));
    expect(outcome.ok ? 'allowed' : outcome.reason).toBe('revocation store unavailable');
    expect(outcome.ok ? 200 : outcome.problem.status).toBe(503);
    expect(expectPrincipal(await bearer(known)).cacheHit).toBe(true);
  });
});
