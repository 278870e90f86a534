/**
 * The admission bound in Redis Cluster under traffic, two gateway processes each, the default
 * store timeout:
 *
 * - the slot of a caller's counter moves from one master to another (the steps `redis-cli
 *   --cluster reshard` takes, for that one slot), `onStoreFailure: deny`. Nothing is counted
 *   outside Redis, so the bound is the limit itself, and the counter must hold exactly the
 *   requests admitted: a refusal, 429 or 503, is charged to nothing (the issue measured
 *   32 × 503 in a reshard, each still counted);
 * - the master of two callers' counters is killed, `onStoreFailure: memory`: within the limit
 *   plus one share per gateway (as test/scale/rate-limit-sentinel.test.ts under Sentinel).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createRedisConnection, parseHostPorts, waitForRedis, type RedisClient } from '../../shared/redis.ts';
import { closeAll } from '../support/close-all.ts';
import { startRedisCluster, type OwnRedisCluster } from '../support/redis-cluster.ts';
import type { RedisNode } from '../support/redis-nodes.ts';
import { callerLoad, everyGatewayKnowsFleet, holdsTheBound, until } from './support/admissions.ts';
import { FAILOVER_TEST_TIMEOUT_MS } from './support/failover-load.ts';
import { freshCustomer, startScaleFixture, type ScaleFixture } from './support/scale-fixture.ts';

const LIMIT = 50;
let cluster: OwnRedisCluster;
let fixture: ScaleFixture;
let observer: RedisClient | undefined;
const nodeClients: Redis[] = [];

beforeAll(async () => {
  [cluster, fixture] = await Promise.all([startRedisCluster(), startScaleFixture()]);
});
afterAll(async () => {
  observer?.disconnect();
  for (const client of nodeClients) client.disconnect();
  await closeAll(fixture?.close(), cluster?.stop());
});

function clientOf(node: RedisNode): Redis {
  const client = node.client();
  nodeClients.push(client);
  return client;
}

/** Moves `slot` from `from` to `to` as redis-cli's reshard does, a key at a time. */
async function moveSlot(slot: number, from: RedisNode, to: RedisNode): Promise<number> {
  const [source, target] = [clientOf(from), clientOf(to)];
  const [sourceId, targetId] = await Promise.all([
    source.call('CLUSTER', 'MYID') as Promise<string>,
    target.call('CLUSTER', 'MYID') as Promise<string>,
  ]);
  await target.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', sourceId);
  await source.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId);
  let moved = 0;
  for (;;) {
    // Slowly, one key at a time, so that traffic meets the slot half-moved (ASK redirections).
    const keys = (await source.call('CLUSTER', 'GETKEYSINSLOT', slot, 1)) as string[];
    if (keys.length === 0) break;
    await new Promise((r) => setTimeout(r, 300));
    await source.call('MIGRATE', '127.0.0.1', to.port, '', 0, 5000, 'KEYS', ...keys);
    moved += keys.length;
  }
  await new Promise((r) => setTimeout(r, 300));
  // The target first, then the source, then the others, as redis-cli does: the other order
  // sends clients back and forth between the two until the target owns the slot.
  const others = cluster.nodes.filter((n) => n.alive() && n !== from && n !== to);
  for (const node of [to, from, ...others])
    await clientOf(node)
      .call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId)
      .catch(() => {}); // replicas refuse; they follow their masters
  return moved;
}

describe('Redis Cluster under traffic: a reshard, a master killed', () => {
  it(
    'two gateways admit at most the limit, and the counter holds exactly what they admitted',
    async () => {
      const prefix = `${inject('redisPrefix')}${randomUUID()}:`;
      const env = { REDIS_CLUSTER_NODES: cluster.seeds, PORTICO_REDIS_PREFIX: prefix };
      const rateLimits = {
        onStoreFailure: 'deny',
        // The store timeout is left at its default: that it outlasts the redirections is the point.
        authFailures: { limit: 1_000_000, window: '60s' },
        policies: [{ name: 'default', key: 'customer', limit: LIMIT, window: '60s' }],
      };
      const gateways = [await fixture.gateway(rateLimits, env), await fixture.gateway(rateLimits, env)];
      observer = createRedisConnection(
        { mode: 'cluster', nodes: parseHostPorts('REDIS_CLUSTER_NODES', cluster.seeds) },
        { keyPrefix: '', commandTimeoutMs: 2000 },
      );
      observer.on('error', () => {});
      expect(await waitForRedis(observer, 10_000)).toBe(true);

      // Both gateways heartbeat into the cluster too (the share they would count alone by).
      const fleet = observer;
      for (let i = 0; i < 100 && (await fleet.zcard(`${prefix}rl:fleet`)) < 2; i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(await fleet.zcard(`${prefix}rl:fleet`)).toBe(2);
      expect(await everyGatewayKnowsFleet(gateways, 2, 10_000)).toBe(true);

      const customer = freshCustomer();
      const key = `${prefix}rl:p:default:60:{${customer}}`;
      const from = await cluster.masterOf(key);
      const to = await cluster
        .masterOf(`${prefix}rl:p:default:60:{${freshCustomer()}}`)
        .then(async (other) => {
          for (let i = 0; other === from; i++) other = await cluster.masterOf(`{other-${i}}`);
          return other;
        });
      const slot = (await observer.call('CLUSTER', 'KEYSLOT', key)) as number;

      let running = true;
      const traffic = callerLoad(
        fixture,
        gateways,
        `Bearer ${await fixture.token(customer)}`,
        () => running,
        [],
        4,
      );
      // The counter exists (traffic is flowing) before its slot starts moving.
      for (let i = 0; i < 100 && (await observer.exists(key)) === 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      const moved = await moveSlot(slot, from, to);
      await new Promise((r) => setTimeout(r, 1000));
      running = false;
      const { statuses } = await traffic;

      const admitted = statuses.filter((s) => s === 200).length;
      const refusedByStore = statuses.filter((s) => s === 503).length;
      const counted = Number(await observer.get(key));
      console.log(
        `cluster reshard (slot ${slot}, ${moved} keys moved, deny): limit ${LIMIT}, admitted ${admitted} of ${statuses.length}, ` +
          `bound ${LIMIT}, 503 ${refusedByStore}, counted ${counted}`,
      );
      expect(await cluster.masterOf(key)).toBe(to);
      expect(statuses.filter((s) => s !== 200 && s !== 429 && s !== 503)).toEqual([]);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
      expect(admitted).toBeLessThanOrEqual(LIMIT);
      expect(counted).toBe(admitted);
    },
    FAILOVER_TEST_TIMEOUT_MS,
  );

  it(
    "the master of two callers' counters is killed under traffic: within limit + one share each",
    async () => {
      const prefix = `${inject('redisPrefix')}${randomUUID()}:`;
      const env = { REDIS_CLUSTER_NODES: cluster.seeds, PORTICO_REDIS_PREFIX: prefix };
      // The store timeout is left at its default; a store failure counts the share in memory.
      const rateLimits = {
        onStoreFailure: 'memory',
        authFailures: { limit: 1_000_000, window: '60s' },
        policies: [{ name: 'default', key: 'customer', limit: LIMIT, window: '60s' }],
      };
      const gateways = [await fixture.gateway(rateLimits, env), await fixture.gateway(rateLimits, env)];
      const fleet = observer!;
      expect(await until(async () => (await fleet.zcard(`${prefix}rl:fleet`)) === 2, 10_000)).toBe(true);
      // Listed is announced too (fleet-share.ts); each gateway is asked what it counts all the same.
      expect(await everyGatewayKnowsFleet(gateways, 2, 10_000)).toBe(true);
      // Two callers whose counters live on one master: the one killed.
      const keyOf = (customer: string) => `${prefix}rl:p:default:60:{${customer}}`;
      const [before, after] = [freshCustomer(), freshCustomer()];
      const victim = await cluster.masterOf(keyOf(before));
      let second = after;
      while ((await cluster.masterOf(keyOf(second))) !== victim) second = freshCustomer();

      let running = true;
      const beforeStatuses: number[] = [];
      const beforeLoad = callerLoad(
        fixture,
        gateways,
        `Bearer ${await fixture.token(before)}`,
        () => running,
        beforeStatuses,
      );
      // The first caller has been refused (its limit reached) before the master goes.
      expect(await until(() => Promise.resolve(beforeStatuses.includes(429)), 20_000)).toBe(true);
      await victim.kill();
      const killedAt = Date.now();
      // The second caller's traffic starts once the master is gone (a count the master took
      // and had not replicated would be admitted again: outside the bound, docs/scaling.md).
      const afterLoad = callerLoad(fixture, gateways, `Bearer ${await fixture.token(second)}`, () => running);
      const promoted = await until(async () => (await cluster.masterOf(keyOf(second))) !== victim, 30_000);
      await new Promise((r) => setTimeout(r, 3000));
      running = false;
      const [one, two] = await Promise.all([beforeLoad, afterLoad]);
      expect(promoted).toBe(true);
      holdsTheBound(
        `cluster master killed (promoted: ${promoted}, ${((Date.now() - killedAt) / 1000).toFixed(1)} s of traffic after)`,
        LIMIT,
        gateways.length,
        { before: one, after: two },
      );
    },
    FAILOVER_TEST_TIMEOUT_MS,
  );
});
