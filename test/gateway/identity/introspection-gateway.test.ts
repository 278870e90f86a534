/**
 * Opaque tokens through a whole gateway (HTTPS, Redis), against oidc-provider in its own
 * process, through a relay that counts the introspection calls: the rate limit keys the caller
 * of an opaque token on its subject and customer exactly as a JWT's, the failed-authentication
 * throttle counts bad opaque tokens as bad JWTs (and over the limit refuses them without asking
 * the provider), and /metrics counts the calls by outcome, the cache hits and the call time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisOnOwnKeys } from '../../support/own-redis-keys.ts';
import { startRecordingUpstream, startTestGateway, type RecordingUpstream } from '../support/harness.ts';
import { startExternalIdp, type ExternalIdp } from './support/external-idp.ts';
import { AUDIENCE, GATEWAY_SECRET } from './support/introspecting.ts';
import { startRelay, type Relay } from './support/relay.ts';

let idp: ExternalIdp;
let relay: Relay;
let upstream: RecordingUpstream;
const dirs: string[] = [];
const clients: Redis[] = [];

beforeAll(async () => {
  idp = await startExternalIdp();
  relay = await startRelay(`${idp.issuer}/token/introspection`);
  upstream = await startRecordingUpstream();
}, 30_000);

afterAll(async () => {
  for (const client of clients) await client.quit();
  await upstream?.close();
  await relay?.close();
  await idp?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * A gateway of its own, on Redis keys of its own, taking opaque tokens and the provider's
 * JWTs; every request comes from 127.0.0.1.
 */
async function withGateway(
  rateLimits: Record<string, unknown>,
  run: (call: (token: string) => Promise<Reply>, metrics: () => Promise<string>) => Promise<void>,
): Promise<void> {
  const redis = await redisOnOwnKeys();
  clients.push(redis);
  const dataDir = mkdtempSync(join(tmpdir(), 'portico-opaque-gateway-'));
  dirs.push(dataDir);
  const gateway = await startTestGateway(
    upstream.url,
    {
      routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'required' }],
      rateLimits,
      auth: {
        jwt: { issuer: idp.issuer, audience: AUDIENCE, jwksUrl: `${idp.issuer}/jwks` },
        introspection: {
          endpoint: relay.url,
          issuer: idp.issuer,
          audience: AUDIENCE,
          clientId: 'portico-gateway',
          acceptJwt: true,
        },
      },
    },
    {
      redis,
      dataDir,
      env: { PORTICO_INTROSPECTION_CLIENT_SECRET: GATEWAY_SECRET },
      assertionKeys: [{ kid: 'opaque-test', secret: randomBytes(32) }],
    },
  );
  const call = async (token: string): Promise<Reply> => {
    const response = await request(`${gateway.origin}/v1/orders`, {
      headers: { authorization: `Bearer ${token}` },
      dispatcher: gateway.agent,
    });
    await response.body.dump();
    return { status: response.statusCode, headers: response.headers };
  };
  const metrics = async () => (await request(`${gateway.adminOrigin}/metrics`)).body.text();
  try {
    await run(call, metrics);
  } finally {
    await gateway.close();
  }
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

const statuses = async (call: (token: string) => Promise<Reply>, tokens: string[]) => {
  const seen: number[] = [];
  for (const token of tokens) seen.push((await call(token)).status);
  return seen;
};

describe('the rate limit, for opaque tokens as for JWTs', () => {
  it('keys on the customer: two tokens of one customer share its limit; 429 with Retry-After', async () => {
    const policies = [{ name: 'per-customer', key: 'customer', limit: 3, window: '60s' }];
    await withGateway({ policies }, async (call) => {
      for (const client of ['opaque-a', 'client-plain']) {
        const [first, second] = [await idp.token(client), await idp.token(client)];
        expect(await statuses(call, [first, first, second])).toEqual([200, 200, 200]);
        const limited = await call(second);
        expect(limited.status, client).toBe(429);
        expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
        expect(String(limited.headers['ratelimit-policy'])).toContain('"per-customer"');
      }
    });
  });

  it('keys on the principal: a new token of the same client does not reset its count', async () => {
    const policies = [{ name: 'per-principal', key: 'principal', limit: 2, window: '60s' }];
    await withGateway({ policies }, async (call) => {
      for (const client of ['opaque-b', 'client-plain']) {
        const tokens = [await idp.token(client), await idp.token(client), await idp.token(client)];
        expect(await statuses(call, tokens), client).toEqual([200, 200, 429]);
      }
    });
  });
});

describe('the failed-authentication throttle, for opaque tokens as for JWTs', () => {
  it('counts bad opaque tokens per address; over the limit they are refused without an introspection call', async () => {
    const authFailures = { limit: 3, window: '60s', newCredentials: 0 };
    await withGateway({ authFailures }, async (call) => {
      const good = await idp.token('opaque-a');
      expect((await call(good)).status).toBe(200);
      const before = relay.requests;
      const guesses = Array.from({ length: 5 }, (_, i) => `guessed-opaque-token-${randomUUID()}-${i}`);
      expect(await statuses(call, guesses)).toEqual([401, 401, 401, 429, 429]);
      // The guesses over the limit cost the identity provider nothing.
      expect(relay.requests - before).toBe(3);
      const again = await call(guesses[0]!);
      expect(again.status).toBe(429);
      expect(Number(again.headers['retry-after'])).toBeGreaterThan(0);
      expect(relay.requests - before).toBe(3);
      // The token known good from this address is not locked out; a new one waits.
      expect((await call(good)).status).toBe(200);
      expect((await call(await idp.token('opaque-b'))).status).toBe(429);
    });
  });
});

describe('introspection metrics in /metrics', () => {
  it('count calls by outcome, cache hits and the time calls took', async () => {
    await withGateway({}, async (call, metrics) => {
      const token = await idp.token('opaque-a');
      expect((await call(token)).status).toBe(200);
      expect((await call(token)).status).toBe(200);
      const madeUp = `made-up-${randomUUID()}`;
      expect((await call(madeUp)).status).toBe(401);
      expect((await call(madeUp)).status).toBe(401);
      relay.down = true;
      try {
        expect((await call(await idp.token('opaque-b'))).status).toBe(503);
      } finally {
        relay.down = false;
      }
      const text = await metrics();
      expect(text).toContain('portico_introspection_calls_total{outcome="active"} 1');
      expect(text).toContain('portico_introspection_calls_total{outcome="inactive"} 1');
      expect(text).toContain('portico_introspection_calls_total{outcome="error"} 1');
      // The second use of each: one active answer, one inactive one, both remembered.
      expect(text).toContain('portico_introspection_cache_hits_total 2');
      expect(text).toContain('portico_introspection_call_duration_seconds_count 3');
    });
  });
});
