/**
 * Gateway processes on a real Sentinel setup (REDIS_SENTINELS, REDIS_SENTINEL_NAME): a master,
 * its replica and three sentinels, made for this file and torn down after it. Limits are
 * exact across replicas, and when the master is killed under load the gateways follow the
 * promoted replica without restart, authentication never failing open in between.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRedisApiKeyStore } from '../../gateway/identity/api-key-store.ts';
import { waitForRedis, type RedisClient } from '../../shared/redis.ts';
import { startRedisSentinel, type OwnRedisSentinel } from '../support/redis-sentinel.ts';
import {
  FAILOVER_TEST_TIMEOUT_MS,
  loadThroughFailover,
  pastTheLimit,
  tally,
  twoGateways,
} from './support/failover-load.ts';
import {
  freshCustomer,
  invalidationCrosses,
  LIMIT,
  startScaleFixture,
  type ScaleFixture,
} from './support/scale-fixture.ts';
import { closeAll } from '../support/close-all.ts';
import { sentinelObserver } from './support/sentinel-gateways.ts';

let sentinel: OwnRedisSentinel;
let fixture: ScaleFixture;
const clients: RedisClient[] = [];

beforeAll(async () => {
  [sentinel, fixture] = await Promise.all([startRedisSentinel(), startScaleFixture()]);
});
afterAll(async () => {
  for (const client of clients) client.disconnect();
  await closeAll(fixture?.close(), sentinel?.stop());
});

async function sentinelClient(prefix: string): Promise<RedisClient> {
  const client = sentinelObserver(sentinel, prefix);
  clients.push(client);
  expect(await waitForRedis(client, 10_000)).toBe(true);
  return client;
}

describe('Redis Sentinel (REDIS_SENTINELS, REDIS_SENTINEL_NAME)', () => {
  it(
    'the master is killed under load: answered throughout, the promoted replica followed, exact after',
    async () => {
      const prefix = `${inject('redisPrefix')}${randomUUID()}:`;
      const env = {
        REDIS_SENTINELS: sentinel.addresses,
        REDIS_SENTINEL_NAME: sentinel.name,
        PORTICO_REDIS_PREFIX: prefix,
      };
      const gateways = await twoGateways(fixture, env);
      // Exact before: both gateways count in the master the sentinels name.
      const before = await pastTheLimit(fixture, gateways);
      expect(before.filter((s) => s === 200)).toHaveLength(LIMIT);

      const revoked = fixture.apiKey(freshCustomer());
      await createRedisApiKeyStore(await sentinelClient(prefix)).revoke(revoked.id);
      const valid = await Promise.all(
        Array.from({ length: 8 }, async () => `Bearer ${await fixture.token(freshCustomer())}`),
      );
      const outcome = await loadThroughFailover(
        fixture,
        gateways,
        { valid, badToken: `${valid[0]!.slice(0, -4)}AAAA`, revokedKey: `ApiKey ${revoked.key}` },
        () => sentinel.master.kill(),
      );
      const byKind = tally(outcome.answers);
      console.log(
        `sentinel failover: window ${outcome.windowMs} ms, ready after ${outcome.readyMs.join('/')} ms`,
        byKind,
      );
      expect(outcome.errors).toEqual([]);
      for (const status of Object.keys(byKind.valid).map(Number)) expect([200, 429, 503]).toContain(status);
      expect(Object.keys(byKind['bad-token'])).toEqual(['401']);
      for (const status of Object.keys(byKind['revoked-key']).map(Number))
        expect([401, 503]).toContain(status);
      expect(Math.max(...outcome.readyMs)).toBeLessThan(30_000);
      expect(outcome.windowMs).toBeLessThan(30_000);

      expect(await sentinel.currentMasterPort()).toBe(sentinel.replica.port);
      const after = await pastTheLimit(fixture, gateways);
      expect(after.filter((s) => s === 200)).toHaveLength(LIMIT);
      expect(after.filter((s) => s === 429)).toHaveLength(10);
      // Invalidations follow the promoted master too: the listeners came back on it by themselves.
      expect(await invalidationCrosses(fixture, gateways[0], gateways[1])).toContain('fwd=uri-miss');
      // The revocation was replicated before the kill: still refused by both, now from the replica.
      for (const g of gateways)
        expect((await fixture.call(g.port, `ApiKey ${revoked.key}`)).status).toBe(401);
    },
    FAILOVER_TEST_TIMEOUT_MS,
  );
});
