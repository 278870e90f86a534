/**
 * The admission bound while Redis Cluster moves the slot of a caller's counter from one master
 * to another under traffic (the steps `redis-cli --cluster reshard` takes, for that one
 * slot): two gateway processes, `onStoreFailure: deny`, the default store timeout. With
 * `deny` nothing is counted outside Redis, so the bound is the limit itself, and the counter
 * must hold exactly the requests admitted: a refusal, 429 or 503, is charged to nothing (the
 * issue measured 32 × 503 in a reshard, each still counted).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createRedisConnection, parseHostPorts, waitForRedis, type RedisClient } from '../../shared/redis.ts';
import type { GatewayProcess } from '../gateway/support/gateway-process.ts';
import { closeAll } from '../support/close-all.ts';
import { startRedisCluster, type OwnRedisCluster } from '../support/redis-cluster.ts';
import type { RedisNode } from '../support/redis-nodes.ts';
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

/** Statuses of one caller's requests, taking turns over the gateways, until `running()` is false. */
async function load(gateways: readonly GatewayProcess[], authorization: string, running: () => boolean) {
  const statuses: number[] = [];
  let sent = 0;
  const worker = async () => {
    while (running()) {
      const gateway = gateways[sent++ % gateways.length]!;
      statuses.push(
        (await fixture.call(gateway.port, authorization, '/v1/orders', 'GET', { timeoutMs: 5000 })).status,
      );
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return statuses;
}

describe('Redis Cluster reshards the slot of a counter under traffic', () => {
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
      const traffic = load(gateways, `Bearer ${await fixture.token(customer)}`, () => running);
      // The counter exists (traffic is flowing) before its slot starts moving.
      for (let i = 0; i < 100 && (await observer.exists(key)) === 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      const moved = await moveSlot(slot, from, to);
      await new Promise((r) => setTimeout(r, 1000));
      running = false;
      const statuses = await traffic;

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
});
