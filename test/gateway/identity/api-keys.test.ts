/**
 * Signed API keys from the attacker's side: forged, re-labelled, unknown-kid and revoked keys
 * are refused; revocation is checked per request in real Redis (and, without Redis, in the
 * data dir file the CLI writes); a store outage fails closed.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mintApiKey } from '../../../gateway/identity/api-key.ts';
import { createRedisApiKeyStore } from '../../../gateway/identity/api-key-store.ts';
import { createAuthenticator, type Authenticator } from '../../../gateway/identity/authenticate.ts';
import type { HmacKey } from '../../../shared/data-dir-secrets.ts';
import {
  authConfig,
  expectInvalidToken,
  expectPrincipal,
  memoryLogger,
  tempDir,
} from './support/fixtures.ts';

const newKey = (kid: string): HmacKey => ({ kid, secret: randomBytes(32) });
const ringEnv = (...keys: HmacKey[]) => ({
  PORTICO_APIKEY_SIGNING_KEYS: keys.map((k) => `${k.kid}:${k.secret.toString('base64')}`).join(','),
});
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

const current = newKey('k2026');
const previous = newKey('k2025');
let redis: Redis;
let auth: Authenticator;
const open: Authenticator[] = [];

function gateway(
  env: Record<string, string>,
  options: { redis?: Redis; dataDir?: string; apiKeys?: boolean } = {},
) {
  const authenticator = createAuthenticator(authConfig({ apiKeys: { enabled: options.apiKeys ?? true } }), {
    dataDir: options.dataDir ?? tempDir('apikey'),
    logger: memoryLogger().logger,
    env,
    ...(options.redis === undefined ? {} : { redis: options.redis }),
  });
  open.push(authenticator);
  return authenticator;
}

const apiKey = (a: Authenticator, key: string) =>
  a.authenticate({ authorization: `ApiKey ${key}` }, '/v1/orders');

beforeAll(() => {
  redis = new Redis(inject('redisUrl'), {
    keyPrefix: `${inject('redisPrefix')}apikeys:`,
    enableOfflineQueue: true,
    commandTimeout: 2000,
  });
  auth = gateway(ringEnv(current, previous), { redis });
});

afterAll(() => {
  for (const a of open) a.close();
  redis.disconnect();
});

describe('a signed API key', () => {
  it('is accepted without any lookup but revocation, and maps to a principal', async () => {
    const { key, claims } = mintApiKey(current, { customerId: 'cust-9', scopes: ['orders:read'] });
    const outcome = expectPrincipal(await apiKey(auth, key));
    expect(outcome.principal).toEqual({
      subject: claims.id,
      customerId: 'cust-9',
      scopes: ['orders:read'],
      authMethod: 'apikey',
      keyId: claims.id,
    });
    // The scheme name is case-insensitive (RFC 9110).
    expectPrincipal(await auth.authenticate({ authorization: `apikey ${key}` }, '/'));
  });

  it('grants only the scopes Portico knows, whatever scopes it was minted with', async () => {
    // mintApiKey takes any well-formed scope (the CLI checks them); the principal must not.
    const { key } = mintApiKey(current, {
      customerId: 'cust-9',
      scopes: ['orders:read', 'superuser', 'admin:all'],
    });
    expect(expectPrincipal(await apiKey(auth, key)).principal.scopes).toEqual(['orders:read']);
  });

  it('signed with the previous signing key still verifies (rotation), until that key is dropped', async () => {
    const { key } = mintApiKey(previous, { customerId: 'cust-9', scopes: [] });
    expectPrincipal(await apiKey(auth, key));
    expectInvalidToken(
      await apiKey(gateway(ringEnv(current), { redis }), key),
      /unknown API key signing key/,
    );
  });
});

describe('the attacker’s checklist for API keys', () => {
  it('a forged payload (other customer, more scopes) under a genuine signature is refused', async () => {
    const { key } = mintApiKey(current, { customerId: 'cust-9', scopes: ['orders:read'] });
    const [, kid, mac] = key.split('.');
    const forgedPayload = b64({ id: `ak_${'A'.repeat(22)}`, cid: 'cust-1', scp: ['admin'], iat: 1 });
    expectInvalidToken(await apiKey(auth, `pk_${forgedPayload}.${kid}.${mac}`), /signature invalid/);
  });

  it('a key signed with a secret we do not hold, under a kid we know, is refused', async () => {
    const { key } = mintApiKey(newKey('k2026'), { customerId: 'cust-9', scopes: ['admin'] });
    expectInvalidToken(await apiKey(auth, key), /signature invalid/);
  });

  it('a random MAC is refused', async () => {
    const { key } = mintApiKey(current, { customerId: 'cust-9', scopes: [] });
    const forged = key.replace(/\.[A-Za-z0-9_-]{43}$/, `.${randomBytes(32).toString('base64url')}`);
    expectInvalidToken(await apiKey(auth, forged), /signature invalid/);
  });

  it('a genuine MAC re-spelt with other padding bits in its last character is refused', async () => {
    // 43 base64url characters carry 258 bits for a 256-bit MAC: the last character's two low
    // bits are padding, so three other spellings decode to the same bytes. Only one key is genuine.
    const { key } = mintApiKey(current, { customerId: 'cust-9', scopes: ['orders:read'] });
    expectPrincipal(await apiKey(auth, key));
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(key.at(-1) ?? '');
    for (const padding of [1, 2, 3]) {
      const respelt = `${key.slice(0, -1)}${alphabet[last ^ padding]}`;
      expect(Buffer.from(respelt.split('.')[2] ?? '', 'base64url')).toEqual(
        Buffer.from(key.split('.')[2] ?? '', 'base64url'),
      );
      expectInvalidToken(await apiKey(auth, respelt), /API key/);
    }
  });

  it('a wrong or re-labelled kid is refused', async () => {
    const { key } = mintApiKey(newKey('nobody'), { customerId: 'cust-9', scopes: [] });
    expectInvalidToken(await apiKey(auth, key), /unknown API key signing key/);
    const genuine = mintApiKey(current, { customerId: 'cust-9', scopes: [] }).key;
    expectInvalidToken(await apiKey(auth, genuine.replace('.k2026.', '.k2025.')), /signature invalid/);
  });

  it('a revoked key is refused on the next request; other keys are unaffected', async () => {
    const revoked = mintApiKey(current, { customerId: 'cust-9', scopes: [] });
    const other = mintApiKey(current, { customerId: 'cust-9', scopes: [] });
    expectPrincipal(await apiKey(auth, revoked.key));
    const store = createRedisApiKeyStore(redis);
    await store.add({
      id: revoked.claims.id,
      customerId: 'cust-9',
      scopes: [],
      createdAt: new Date().toISOString(),
    });
    expect(await store.revoke(revoked.claims.id)).toBe(true);
    expectInvalidToken(await apiKey(auth, revoked.key), /revoked/);
    expectPrincipal(await apiKey(auth, other.key));
    // The revocation lives in this run's Redis keys, under the client's prefix.
    const raw = new Redis(inject('redisUrl'));
    expect(await raw.sismember(`${inject('redisPrefix')}apikeys:apikeys:revoked`, revoked.claims.id)).toBe(1);
    raw.disconnect();
  });

  it('malformed, oversized and truncated keys are refused', async () => {
    const { key } = mintApiKey(current, { customerId: 'cust-9', scopes: [] });
    for (const bad of [
      key.slice(0, -1),
      `${key}x`,
      'pk_',
      `pk_${'a'.repeat(5000)}.k2026.${'a'.repeat(43)}`,
      key.replace('pk_', 'sk_'),
    ]) {
      expectInvalidToken(await apiKey(auth, bad), /API key/);
    }
  });

  it('is refused when API keys are disabled', async () => {
    const { key } = mintApiKey(current, { customerId: 'cust-9', scopes: [] });
    expectInvalidToken(await apiKey(gateway(ringEnv(current), { apiKeys: false }), key), /not accepted/);
  });
});

describe('a revocation store outage', () => {
  it('fails closed with 503: a revoked key cannot slip through while Redis is down', async () => {
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      commandTimeout: 500,
      retryStrategy: () => null,
    });
    const a = gateway(ringEnv(current), { redis: down });
    const { key } = mintApiKey(current, { customerId: 'cust-9', scopes: [] });
    const outcome = await apiKey(a, key);
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) {
      expect(outcome.problem.code).toBe('ERR_SERVICE_UNAVAILABLE');
      expect(outcome.reason).toBe('revocation store unavailable');
    }
    down.disconnect();
  });
});

describe('without Redis', () => {
  it('signing keys are created once in the data dir and revocations come from its file', async () => {
    const dataDir = tempDir('apikey-file');
    const a = gateway({}, { dataDir });
    const { loadApiKeySigningKeys } = await import('../../../gateway/identity/api-key-signing-keys.ts');
    const [signing] = loadApiKeySigningKeys({}, dataDir);
    const { key, claims } = mintApiKey(signing!, { customerId: 'cust-3', scopes: [] });
    expectPrincipal(await apiKey(a, key));
    // Another process (the CLI) revokes through the file; the gateway's poll picks it up.
    const { createFileApiKeyStore } = await import('../../../gateway/identity/api-key-store.ts');
    const cli = createFileApiKeyStore(dataDir);
    expect(await cli.revoke(claims.id)).toBe(false); // no record minted through it: revoked anyway
    await expect.poll(async () => (await apiKey(a, key)).ok, { timeout: 5000 }).toBe(false);
    expectInvalidToken(await apiKey(a, key), /revoked/);
  });
});
