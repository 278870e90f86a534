/**
 * What an operator sizing `rateLimits.storeTimeoutMs` must know (docs/redis.md, "Checks that
 * wait on Redis"): the DPoP replay check and the opaque-token revocation check are Redis
 * commands on the gateway's connection, under that timeout, and a Redis that does not answer
 * within it is a 503 for the request, never an allow. Real Redis, behind a proxy that stops
 * forwarding (test/support/redis-freeze-proxy.ts) once the connection is up; and behind one that
 * holds each chunk 150 ms each way (test/support/delay-proxy.ts), a 300 ms round trip, within a
 * timeout raised to 1000 ms; at the default 250 ms such a connection never becomes ready.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_RATE_LIMITS } from '../../../gateway/config/schema/rate-limit.ts';
import { answerJudge } from '../../../gateway/identity/introspection/answer.ts';
import { watchRevocations } from '../../../gateway/identity/introspection/revocations.ts';
import { createIntrospectionVerifier } from '../../../gateway/identity/introspection/verifier.ts';
import { createSenderConstraints } from '../../../gateway/identity/sender-constraint/sender-check.ts';
import type { Principal } from '../../../shared/principal.ts';
import { createRedisClient, waitForRedis } from '../../../shared/redis.ts';
import { startDelayProxy, type DelayProxy } from '../../support/delay-proxy.ts';
import { startRedisFreezeProxy, type FreezeProxy } from '../../support/redis-freeze-proxy.ts';
import { AUDIENCE, createDpopKey, dpopProof } from './support/dpop-client.ts';
import { authConfig } from './support/fixtures.ts';

const ONE_WAY_MS = 150;
const DEFAULT_TIMEOUT_MS = DEFAULT_RATE_LIMITS.storeTimeoutMs;
const HTU = 'https://api.portico.test/v1/orders';

let distant: DelayProxy;
let freezer: FreezeProxy;
const clients: Redis[] = [];

beforeAll(async () => {
  const redis = new URL(inject('redisUrl'));
  const target = { host: redis.hostname, port: Number(redis.port || 6379) };
  distant = await startDelayProxy(target, ONE_WAY_MS);
  freezer = await startRedisFreezeProxy(target);
});

afterAll(async () => {
  for (const client of clients) client.disconnect();
  freezer?.thaw();
  await freezer?.close();
  await distant?.close();
});

/** The gateway's connection through `port`, with `commandTimeoutMs` as its store timeout. */
async function redisThrough(port: number, commandTimeoutMs: number): Promise<Redis> {
  const client = createRedisClient({
    url: `redis://127.0.0.1:${port}`,
    keyPrefix: `${inject('redisPrefix')}command-timeout-${randomUUID()}:`,
    commandTimeoutMs,
  });
  // Its timeouts are what is tested; the gateway logs them on its own listener.
  client.on('error', () => {});
  clients.push(client);
  expect(await waitForRedis(client, 5000)).toBe(true);
  return client;
}

/** Connected at the default timeout, and then Redis stops answering. */
async function stalledRedis(): Promise<Redis> {
  freezer.thaw();
  const client = await redisThrough(freezer.port, DEFAULT_TIMEOUT_MS);
  freezer.freeze();
  return client;
}

const distantRedis = () => redisThrough(distant.port, 1000);

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const start = performance.now();
  const result = await work();
  return { result, ms: performance.now() - start };
}

describe('a DPoP proof, with Redis slower than the command timeout', () => {
  async function checkProof(redis: Redis) {
    const key = await createDpopKey();
    const principal: Principal = {
      subject: 'client-a',
      customerId: 'cust-a',
      scopes: [],
      authMethod: 'jwt',
      cnf: { jkt: key.jkt },
    };
    const constraints = createSenderConstraints(authConfig({}).dpop, {
      redis,
      now: Date.now,
      nonceKeys: () => [],
    });
    const token = `token-${randomUUID()}`;
    const proof = await dpopProof(key, { htm: 'GET', htu: HTU, accessToken: token });
    const request = { method: 'GET', htu: HTU, certificateThumbprint: () => undefined, binding: undefined };
    return timed(() => constraints.dpop(principal, token, proof, request));
  }

  it(`is a 503 with Retry-After after the default ${DEFAULT_TIMEOUT_MS} ms`, async () => {
    const { result, ms } = await checkProof(await stalledRedis());
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toBe('DPoP proof replay store unavailable');
    expect(result.problem.status).toBe(503);
    expect(result.problem.headers['retry-after']).toBe('5');
    expect(ms).toBeGreaterThanOrEqual(DEFAULT_TIMEOUT_MS - 5);
    expect(ms).toBeLessThan(DEFAULT_TIMEOUT_MS + 500);
  });

  it('is accepted from a Redis 300 ms away with the timeout raised over the round trip', async () => {
    const { result, ms } = await checkProof(await distantRedis());
    expect(result).toEqual({ ok: true });
    expect(ms).toBeGreaterThanOrEqual(2 * ONE_WAY_MS - 5);
  });
});

describe("an opaque token's first use, with Redis slower than the command timeout", () => {
  async function firstUse(redis: Redis) {
    const revocations = watchRevocations(
      redis,
      { revoked: () => {}, missed: () => {} },
      pino({ level: 'silent' }),
    );
    const verifier = createIntrospectionVerifier({
      introspect: () =>
        Promise.resolve({
          ok: true as const,
          answer: { active: true, aud: AUDIENCE, sub: 'client-a', customer_id: 'cust-a' },
        }),
      judge: answerJudge({
        issuer: 'https://idp.portico.test',
        audience: AUDIENCE,
        customerClaim: 'customer_id',
        clockSkewSeconds: 5,
        maxLifetimeSeconds: 3600,
      }),
      cacheMaxSeconds: 300,
      negativeCacheSeconds: 0,
      cacheMaxEntries: 10,
      maxTokenBytes: 4096,
      now: Date.now,
      revocations,
    });
    try {
      return await timed(() => verifier.verify(randomUUID()));
    } finally {
      revocations.close();
    }
  }

  it(`is unavailable (503) when the revocation record is not read within ${DEFAULT_TIMEOUT_MS} ms`, async () => {
    const { result, ms } = await firstUse(await stalledRedis());
    expect(result).toEqual({ ok: false, kind: 'unavailable', reason: 'revocation store unavailable' });
    expect(ms).toBeGreaterThanOrEqual(DEFAULT_TIMEOUT_MS - 5);
    expect(ms).toBeLessThan(DEFAULT_TIMEOUT_MS + 500);
  });

  it('is accepted from a Redis 300 ms away with the timeout raised over the round trip', async () => {
    const { result } = await firstUse(await distantRedis());
    expect(result).toMatchObject({ ok: true, cacheHit: false });
  });
});

describe('a Redis whose round trip is over the command timeout', () => {
  it('is never ready at the default: its ready check times out as every command would', async () => {
    const client = createRedisClient({
      url: `redis://127.0.0.1:${distant.port}`,
      keyPrefix: `${inject('redisPrefix')}command-timeout-${randomUUID()}:`,
      commandTimeoutMs: DEFAULT_TIMEOUT_MS,
    });
    client.on('error', () => {});
    clients.push(client);
    expect(await waitForRedis(client, 3000)).toBe(false);
  });
});
