/**
 * The opaque-token verifier when only its revocation listener goes silent: the listener's own
 * connection runs through a proxy that stops forwarding without closing (a blackholed link),
 * while commands reach Redis directly. Within the liveness bound the verifier stops taking its
 * cached answers as they are and reads the revocation record instead: a token revoked meanwhile
 * is refused, another is still served from the cache without asking the provider. Once the
 * listener is back on a new connection, every cached answer is forgotten. Real Redis and
 * sockets; the provider is a function that counts its calls (introspection.test.ts runs a real one).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { answerJudge } from '../../../gateway/identity/introspection/answer.ts';
import {
  MIN_REVOCATION_SECONDS,
  revokedKey,
  revokeTokenDigest,
  watchRevocations,
} from '../../../gateway/identity/introspection/revocations.ts';
import {
  createIntrospectionVerifier,
  tokenDigest,
  type IntrospectionVerifier,
} from '../../../gateway/identity/introspection/verifier.ts';
import { createRedisClient, createSubscriber, waitForRedis } from '../../../shared/redis.ts';
import { startRedisFreezeProxy, type FreezeProxy } from '../../support/redis-freeze-proxy.ts';

const AUDIENCE = 'https://api.portico.test';
const ISSUER = 'https://idp.portico.test';

let proxy: FreezeProxy;
const clients: Redis[] = [];

beforeEach(async () => {
  const redisUrl = new URL(inject('redisUrl'));
  proxy = await startRedisFreezeProxy({ host: redisUrl.hostname, port: Number(redisUrl.port || 6379) });
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.disconnect();
  await proxy.close();
});

async function connect(url: string, keyPrefix: string): Promise<Redis> {
  const client = createRedisClient({ url, keyPrefix });
  clients.push(client);
  expect(await waitForRedis(client, 5000)).toBe(true);
  return client;
}

async function until(condition: () => boolean, timeoutMs: number): Promise<number> {
  const start = performance.now();
  while (!condition() && performance.now() - start < timeoutMs) await new Promise((r) => setTimeout(r, 10));
  return performance.now() - start;
}

/**
 * A verifier whose provider calls every token active and counts its calls, and the revocation
 * listener wired to it as in opaque-tokens.ts; the listener subscribes on `subscriber`.
 */
function listenedVerifier(direct: Redis, subscriber: ReturnType<typeof createSubscriber>) {
  const counts = { calls: 0, missed: 0 };
  const revocations = watchRevocations(
    direct,
    {
      revoked: (id) => verifier.forget(id),
      missed: () => {
        counts.missed++;
        verifier.forgetAll();
      },
    },
    pino({ level: 'silent' }),
    subscriber,
  );
  const verifier: IntrospectionVerifier = createIntrospectionVerifier({
    introspect: () => {
      counts.calls++;
      const answer = { active: true, aud: AUDIENCE, sub: 'client-a', customer_id: 'cust-a', scope: '' };
      return Promise.resolve({ ok: true as const, answer });
    },
    judge: answerJudge({
      issuer: ISSUER,
      audience: AUDIENCE,
      customerClaim: 'customer_id',
      clockSkewSeconds: 5,
      maxLifetimeSeconds: 3600,
    }),
    cacheMaxSeconds: 3600,
    negativeCacheSeconds: 0,
    cacheMaxEntries: 100,
    maxTokenBytes: 4096,
    now: Date.now,
    revocations,
  });
  return { revocations, verifier, counts };
}

describe('opaque-token revocations over a listener link that goes silent', () => {
  it('the record decides within the bound, and the cache starts over once the listener is back', async () => {
    const prefix = `${inject('redisPrefix')}revocation-liveness-${randomUUID()}:`;
    const direct = await connect(inject('redisUrl'), prefix);
    const cut = await connect(`redis://127.0.0.1:${proxy.port}`, prefix);
    const { revocations, verifier, counts } = listenedVerifier(direct, createSubscriber(cut));
    const [stolen, other] = [randomUUID(), randomUUID()];
    try {
      await until(() => revocations.live(), 5000);
      expect(revocations.live()).toBe(true);
      // The first subscription forgets what was cached before it: nothing yet.
      expect(counts.missed).toBe(1);
      for (const token of [stolen, other]) expect((await verifier.verify(token)).ok).toBe(true);
      expect(verifier.known(stolen)?.customerId).toBe('cust-a');
      expect(counts.calls).toBe(2);

      proxy.freeze();
      await revokeTokenDigest(direct, tokenDigest(stolen), MIN_REVOCATION_SECONDS);
      const noticedMs = await until(() => !revocations.live(), 10_000);
      console.info(`revocation listener: a silent link noticed after ${Math.round(noticedMs)} ms`);
      // LIVE_WINDOW_MS (1 s) after the last answered ping, sent at most PING_INTERVAL_MS before.
      expect(noticedMs).toBeLessThan(2000);
      // Not trusted as they are: the synchronous fast path knows neither token now.
      expect(verifier.known(stolen)).toBeUndefined();
      expect(verifier.known(other)).toBeUndefined();
      expect(await verifier.verify(stolen)).toEqual({ ok: false, kind: 'invalid', reason: 'token revoked' });
      expect(await verifier.verify(other)).toMatchObject({ ok: true, cacheHit: true });
      expect(counts.calls).toBe(2);

      // Past RECONNECT_AFTER_MS the connection is replaced; healed, the listener subscribes anew.
      await new Promise((r) => setTimeout(r, 3500));
      proxy.thaw();
      await until(() => revocations.live(), 10_000);
      expect(revocations.live()).toBe(true);
      expect(counts.missed).toBe(2);
      expect(verifier.known(other)).toBeUndefined();
      expect((await verifier.verify(other)).ok).toBe(true);
      expect(counts.calls).toBe(3);
      expect((await verifier.verify(stolen)).ok).toBe(false);
    } finally {
      proxy.thaw();
      revocations.close();
      await direct.del(revokedKey(tokenDigest(stolen)));
    }
  }, 30_000);

  it('forgets answers cached before its first subscription: a revocation published before it was never heard', async () => {
    const prefix = `${inject('redisPrefix')}revocation-first-${randomUUID()}:`;
    const direct = await connect(inject('redisUrl'), prefix);
    const cut = await connect(`redis://127.0.0.1:${proxy.port}`, prefix);
    // A gateway just started whose listener has not subscribed yet: its connection hears nothing.
    proxy.freeze();
    const { revocations, verifier, counts } = listenedVerifier(direct, createSubscriber(cut));
    const stolen = randomUUID();
    try {
      expect(revocations.live()).toBe(false);
      expect((await verifier.verify(stolen)).ok).toBe(true);
      await revokeTokenDigest(direct, tokenDigest(stolen), MIN_REVOCATION_SECONDS);
      proxy.thaw();
      await until(() => revocations.live(), 10_000);
      expect(revocations.live()).toBe(true);
      expect(counts.missed).toBe(1);
      expect(verifier.known(stolen)).toBeUndefined();
      expect(await verifier.verify(stolen)).toEqual({ ok: false, kind: 'invalid', reason: 'token revoked' });
      expect(counts.calls).toBe(2);
    } finally {
      proxy.thaw();
      revocations.close();
      await direct.del(revokedKey(tokenDigest(stolen)));
    }
  }, 20_000);
});
