/**
 * The cache invalidation bus on a real Redis Cluster of its own: a replica's listening node
 * is killed, the loss is reported (the cache would forget what it holds), the listener moves
 * to another node, and invalidations flow again. ioredis's own cluster subscriber would have
 * moved silently, losing the messages of the gap without a word.
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInvalidationBus, type InvalidationMessage } from '../../gateway/cache/bus/invalidation-bus.ts';
import {
  createRedisConnection,
  createSubscriber,
  parseHostPorts,
  waitForRedis,
  type RedisClient,
  type SubscriberConnection,
} from '../../shared/redis.ts';
import { startRedisCluster, type OwnRedisCluster } from '../support/redis-cluster.ts';

let cluster: OwnRedisCluster;
const closers: (() => void)[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
});
afterAll(async () => {
  for (const close of closers) close();
  await cluster?.stop();
});

async function connection(): Promise<{ client: RedisClient; subscriber: SubscriberConnection }> {
  const client = createRedisConnection(
    { mode: 'cluster', nodes: parseHostPorts('REDIS_CLUSTER_NODES', cluster.seeds) },
    { commandTimeoutMs: 2000 },
  );
  client.on('error', () => {});
  expect(await waitForRedis(client, 10_000)).toBe(true);
  const subscriber = createSubscriber(client);
  closers.push(
    () => subscriber.disconnect(),
    () => client.disconnect(),
  );
  return { client, subscriber };
}

async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(condition()).toBe(true);
}

describe('invalidation bus on Redis Cluster', () => {
  it("reports its node's loss, moves to another node and hears the other replica again", async () => {
    const channel = `portico-test:${randomUUID()}:cache-invalidation`;
    const log = pino({ level: 'silent' });
    const one = await connection();
    const two = await connection();
    const heard: InvalidationMessage[] = [];
    let resubscribed = 0;
    let lost = false;
    const sender = createInvalidationBus({
      publisher: one.client,
      subscriber: one.subscriber,
      channel,
      log,
      onMessage: () => {},
      onResubscribed: () => {},
    });
    const listener = createInvalidationBus({
      publisher: two.client,
      subscriber: two.subscriber,
      channel,
      log,
      onMessage: (message) => heard.push(message),
      onResubscribed: () => resubscribed++,
    });
    closers.push(
      () => void sender.close(),
      () => void listener.close(),
    );
    expect(await sender.whenReady(5000)).toBe(true);
    expect(await listener.whenReady(5000)).toBe(true);

    await sender.publish({ paths: ['/v1/orders/1'] });
    await until(() => heard.length === 1);

    // The node the listener hears on: the one counting a subscriber of the channel.
    const counts = await Promise.all(
      cluster.nodes.map(async (node) => {
        const [, count] = (await node.client().call('PUBSUB', 'NUMSUB', channel)) as [string, number];
        return count;
      }),
    );
    const listening = cluster.nodes.filter((_, i) => (counts[i] ?? 0) > 0);
    expect(listening.length).toBeGreaterThan(0);
    two.subscriber.on('close', () => (lost = true));
    await Promise.all(listening.map((node) => node.kill()));

    await until(() => lost && listener.ready() && resubscribed === 1);
    // A message published now reaches it on its new node (the publisher may need a retry
    // while the cluster replaces a master that was killed too).
    await until(() => {
      void sender.publish({ prefix: '/v1/orders' });
      return heard.some((message) => message.prefix === '/v1/orders');
    });
    expect(heard[0]).toEqual({ paths: ['/v1/orders/1'] });
  });
});
