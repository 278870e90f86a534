/**
 * A join is known to the fleet at once in Redis Cluster and behind Sentinel too, as on one node
 * (test/gateway/rate-limit/fleet-share.test.ts): the heartbeat script's PUBLISH reaches the
 * other gateway's listening connection, which is made as the cache invalidation bus's is (in a
 * cluster, one node at a time, hearing every node's messages).
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { joinFleet, type FleetMembership } from '../../gateway/rate-limit/fleet-share.ts';
import {
  createRedisConnection,
  parseHostPorts,
  waitForRedis,
  type RedisClient,
  type RedisTarget,
} from '../../shared/redis.ts';
import { closeAll } from '../support/close-all.ts';
import { countsAfterAJoin } from '../support/fleet-watch.ts';
import { startRedisCluster, type OwnRedisCluster } from '../support/redis-cluster.ts';
import { startRedisSentinel, type OwnRedisSentinel } from '../support/redis-sentinel.ts';

const log = pino({ level: 'silent' });
let cluster: OwnRedisCluster;
let sentinel: OwnRedisSentinel;
const clients: RedisClient[] = [];
const memberships: FleetMembership[] = [];

beforeAll(async () => {
  [cluster, sentinel] = await Promise.all([startRedisCluster(), startRedisSentinel()]);
});
afterAll(async () => {
  for (const membership of memberships) await membership.leave();
  for (const client of clients) client.disconnect();
  await closeAll(cluster?.stop(), sentinel?.stop());
});

async function connect(target: RedisTarget, keyPrefix: string): Promise<RedisClient> {
  const client = createRedisConnection(target, { keyPrefix, commandTimeoutMs: 2000 });
  client.on('error', () => {});
  clients.push(client);
  expect(await waitForRedis(client, 10_000)).toBe(true);
  return client;
}

async function joinIsKnownAtOnce(target: RedisTarget): Promise<void> {
  const prefix = `${inject('redisPrefix')}${randomUUID()}:`;
  const observer = await connect(target, prefix);
  const join = async () => {
    const membership = joinFleet(await connect(target, prefix), () => 1, log);
    memberships.push(membership);
    return membership;
  };
  expect(await countsAfterAJoin({ observer, join }), 'within 300 ms of the join').toEqual({
    known: true,
    first: 2,
    second: 2,
    listening: true,
  });
}

describe('a join is known to the fleet at once', () => {
  it('in Redis Cluster', () =>
    joinIsKnownAtOnce({ mode: 'cluster', nodes: parseHostPorts('REDIS_CLUSTER_NODES', cluster.seeds) }));

  it('behind Sentinel', () =>
    joinIsKnownAtOnce({
      mode: 'sentinel',
      sentinels: parseHostPorts('REDIS_SENTINELS', sentinel.addresses),
      name: sentinel.name,
    }));
});
