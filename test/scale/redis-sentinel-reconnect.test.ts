/**
 * A Sentinel client never gives up on its own (shared/lasting-redis.ts). ioredis's failover
 * detector, on the sentinels' +switch-master, disconnects the client's connector; when that
 * lands while the client is asking a sentinel where the master is, ioredis 6 ends the client
 * for good and every command fails with "Connection is closed." until the gateway restarts.
 * That happened in about one failover in four in redis-sentinel.test.ts. `disconnect(true)`
 * ("drop the connection and reconnect") takes the very same path, so it reproduces the
 * interleaving every time, on a real Sentinel setup.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisConnection, parseHostPorts, waitForRedis, type RedisClient } from '../../shared/redis.ts';
import { startRedisSentinel, type OwnRedisSentinel } from '../support/redis-sentinel.ts';
import { closeAll } from '../support/close-all.ts';

let sentinel: OwnRedisSentinel;
const clients: RedisClient[] = [];

beforeAll(async () => {
  sentinel = await startRedisSentinel();
});
afterAll(async () => {
  for (const client of clients) client.disconnect();
  await closeAll(sentinel?.stop());
});

function sentinelClient(): RedisClient {
  const client = createRedisConnection(
    {
      mode: 'sentinel',
      sentinels: parseHostPorts('REDIS_SENTINELS', sentinel.addresses),
      name: sentinel.name,
    },
    { keyPrefix: 'portico-reconnect-test:', commandTimeoutMs: 2000 },
  );
  client.on('error', () => {});
  clients.push(client);
  return client;
}

/** Resolves when the client starts to connect again (it then asks a sentinel first). */
const nextConnectAttempt = (client: RedisClient) =>
  new Promise<void>((resolve) => client.once('connecting', () => resolve()));

describe('a Sentinel client cut while it asks the sentinels', () => {
  it('connects again instead of ending, and its commands work', async () => {
    const client = sentinelClient();
    expect(await waitForRedis(client, 10_000)).toBe(true);
    const attempt = nextConnectAttempt(client);
    // Drops the master connection: the client reconnects, asking a sentinel first.
    client.disconnect(true);
    await attempt;
    // What the failover detector does on +switch-master, in the middle of that question.
    client.disconnect(true);
    expect(await waitForRedis(client, 5000)).toBe(true);
    expect(await client.ping()).toBe('PONG');
  });

  it('still ends when it is closed', async () => {
    const client = sentinelClient();
    expect(await waitForRedis(client, 10_000)).toBe(true);
    const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
    await client.quit();
    await ended;
    await new Promise((r) => setTimeout(r, 500));
    expect(client.status).toBe('end');
  });
});
