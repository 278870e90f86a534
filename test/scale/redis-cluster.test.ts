/**
 * Gateway processes on a real Redis Cluster (REDIS_CLUSTER_NODES): six `redis-server` nodes,
 * three masters and three replicas, made for this file and torn down after it. Limits stay
 * exact across replicas, revocations and cache invalidations cross the cluster, and a killed
 * master is followed without restart, authentication never failing open in between.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRedisApiKeyStore } from '../../gateway/identity/api-key-store.ts';
import { createRedisCounter } from '../../gateway/rate-limit/redis-counter.ts';
import { createRedisConnection, parseHostPorts, waitForRedis, type RedisClient } from '../../shared/redis.ts';
import type { GatewayProcess } from '../gateway/support/gateway-process.ts';
import { startRedisCluster, type OwnRedisCluster } from '../support/redis-cluster.ts';
import {
  FAILOVER_TEST_TIMEOUT_MS,
  loadThroughFailover,
  pastTheLimit,
  spread,
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

let cluster: OwnRedisCluster;
let fixture: ScaleFixture;
const clients: RedisClient[] = [];

beforeAll(async () => {
  [cluster, fixture] = await Promise.all([startRedisCluster(), startScaleFixture()]);
});
afterAll(async () => {
  for (const client of clients) client.disconnect();
  await closeAll(fixture?.close(), cluster?.stop());
});

async function clusterClient(prefix: string): Promise<RedisClient> {
  const client = createRedisConnection(
    { mode: 'cluster', nodes: parseHostPorts('REDIS_CLUSTER_NODES', cluster.seeds) },
    { keyPrefix: prefix, commandTimeoutMs: 2000 },
  );
  client.on('error', () => {});
  clients.push(client);
  expect(await waitForRedis(client, 10_000)).toBe(true);
  return client;
}

async function clusterGateways(): Promise<{ gateways: GatewayProcess[]; prefix: string }> {
  const prefix = `${inject('redisPrefix')}${randomUUID()}:`;
  const gateways = await twoGateways(fixture, {
    REDIS_CLUSTER_NODES: cluster.seeds,
    PORTICO_REDIS_PREFIX: prefix,
  });
  return { gateways, prefix };
}

describe('Redis Cluster (REDIS_CLUSTER_NODES)', () => {
  it('two gateways admit exactly the limit, counted in the slot of the counted key, not the policy', async () => {
    const { gateways, prefix } = await clusterGateways();
    const customers = Array.from({ length: 6 }, freshCustomer);
    const [one] = customers as [string];
    const statuses = await spread(fixture, gateways, `Bearer ${await fixture.token(one)}`, 4 * LIMIT);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3 * LIMIT);
    for (const customer of customers.slice(1))
      expect((await spread(fixture, gateways, `Bearer ${await fixture.token(customer)}`, 1))[0]).toBe(200);

    // Each customer's counter is tagged with the customer: the policy's counters spread over
    // the slots (and so the masters), not one hot slot. A refused request is charged to none.
    const redis = await clusterClient('');
    const keys = customers.map((customer) => `${prefix}rl:p:default:60:{${customer}}`);
    expect(await redis.get(keys[0]!)).toBe(String(LIMIT));
    for (const key of keys.slice(1)) expect(await redis.get(key)).toBe('1');
    const slots = await Promise.all(keys.map((key) => redis.call('CLUSTER', 'KEYSLOT', key)));
    expect(new Set(slots).size).toBeGreaterThan(1);
  });

  it("one turn's counts of several policies, on several masters, are each exact", async () => {
    const prefix = `${inject('redisPrefix')}${randomUUID()}:`;
    const counter = createRedisCounter(await clusterClient(prefix));
    // Three policies' tags on three different masters, and a key without a tag.
    const byMaster = new Map<number, string>();
    for (let i = 0; byMaster.size < 3; i++) {
      const key = `rl:{p:policy${i}:60}:x`;
      const master = await cluster.masterOf(prefix + key);
      if (!byMaster.has(master.port)) byMaster.set(master.port, key);
    }
    const keys = [...byMaster.values(), 'untagged'];
    // All asked in one turn: one batch, split per slot (one script may touch one slot only),
    // each part as big as the others (ioredis would group same-sized script calls by mistake).
    const counted = await Promise.all([...keys, ...keys].map((key) => counter.add(key, 60, 1, 1000)));
    expect(counted.map((c) => c.consumed)).toEqual([...keys.map(() => 1), ...keys.map(() => 2)]);
  });

  it('a revocation written to the cluster is refused by both gateways', async () => {
    const { gateways, prefix } = await clusterGateways();
    const { key, id } = fixture.apiKey(freshCustomer());
    for (const g of gateways) expect((await fixture.call(g.port, `ApiKey ${key}`)).status).toBe(200);
    await createRedisApiKeyStore(await clusterClient(prefix)).revoke(id);
    for (const g of gateways) expect((await fixture.call(g.port, `ApiKey ${key}`)).status).toBe(401);
  });

  it('a write through one gateway invalidates what the other cached', async () => {
    const { gateways } = await clusterGateways();
    const [a, b] = gateways as [GatewayProcess, GatewayProcess];
    // A cluster node relays a PUBLISH to the other nodes over the cluster bus: gateway b may
    // hear it a few milliseconds after gateway a has answered the write.
    expect(await invalidationCrosses(fixture, a, b)).toContain('fwd=uri-miss');
  });

  it(
    'the master holding the limit is killed under load: answered throughout, back without restart, exact after',
    async () => {
      const { gateways, prefix } = await clusterGateways();
      const revoked = fixture.apiKey(freshCustomer());
      await createRedisApiKeyStore(await clusterClient(prefix)).revoke(revoked.id);
      const loaded = Array.from({ length: 8 }, freshCustomer);
      const valid = await Promise.all(
        loaded.map(async (customer) => `Bearer ${await fixture.token(customer)}`),
      );
      // The master of one of the loaded customers' counters.
      const counted = `${prefix}rl:p:default:60:{${loaded[0]!}}`;
      const master = await cluster.masterOf(counted);

      const outcome = await loadThroughFailover(
        fixture,
        gateways,
        { valid, badToken: `${valid[0]!.slice(0, -4)}AAAA`, revokedKey: `ApiKey ${revoked.key}` },
        () => master.kill(),
      );
      const byKind = tally(outcome.answers);
      console.log(
        `cluster failover: window ${outcome.windowMs} ms, ready after ${outcome.readyMs.join('/')} ms`,
        byKind,
      );
      expect(outcome.errors).toEqual([]);
      expect(Object.keys(byKind.valid).map(Number).sort()).toEqual(expect.arrayContaining([200]));
      for (const status of Object.keys(byKind.valid).map(Number)) expect([200, 429, 503]).toContain(status);
      expect(Object.keys(byKind['bad-token'])).toEqual(['401']);
      for (const status of Object.keys(byKind['revoked-key']).map(Number))
        expect([401, 503]).toContain(status);
      expect(Math.max(...outcome.readyMs)).toBeLessThan(30_000);
      expect(outcome.windowMs).toBeLessThan(30_000);

      // On the promoted replica: a fresh customer gets exactly the limit again.
      expect(await cluster.masterOf(counted)).not.toBe(master);
      const statuses = await pastTheLimit(fixture, gateways);
      expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
      expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    },
    FAILOVER_TEST_TIMEOUT_MS,
  );
});
