/**
 * A gateway stopping while Redis has gone silent: the cache invalidation bus lets go of its
 * subscription without waiting for an UNSUBSCRIBE that will never be answered (the subscribed
 * connection has no command deadline of its own), so the drain is not held until its deadline.
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createInvalidationBus } from '../../../gateway/cache/bus/invalidation-bus.ts';
import { createRedisClient, createSubscriber, waitForRedis } from '../../../shared/redis.ts';
import { startOwnRedis, type OwnRedis } from '../../support/redis-server.ts';

const servers: OwnRedis[] = [];
afterAll(async () => {
  for (const server of servers) await server.stop();
});

describe('the cache invalidation bus', () => {
  it('closes within a second on a Redis that has gone silent', async () => {
    const own = await startOwnRedis();
    servers.push(own);
    const publisher = createRedisClient({
      url: own.url,
      keyPrefix: `t${randomUUID()}:`,
      commandTimeoutMs: 2000,
    });
    publisher.on('error', () => {});
    expect(await waitForRedis(publisher)).toBe(true);
    const subscriber = createSubscriber(publisher);
    const bus = createInvalidationBus({
      publisher,
      subscriber,
      channel: 'portico:cache-invalidation',
      log: pino({ level: 'silent' }),
      onMessage: () => {},
      onResubscribed: () => {},
    });
    try {
      expect(await bus.whenReady(5000)).toBe(true);
      own.freeze();
      const closed = bus.close().then(() => 'closed');
      const waiting = new Promise((r) => setTimeout(r, 1500, 'still closing after 1.5 s'));
      expect(await Promise.race([closed, waiting])).toBe('closed');
    } finally {
      own.thaw();
      subscriber.disconnect();
      publisher.disconnect();
    }
  });
});
