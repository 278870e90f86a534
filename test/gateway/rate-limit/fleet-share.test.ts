/**
 * A gateway that joins the fleet is counted by the others at once, not at their next heartbeat
 * (docs/scaling.md, "The fleet share"): a Redis outage just after a join would otherwise leave
 * the older gateways counting a fleet one smaller, each admitting more than its share. Two
 * memberships on two connections of their own stand for two gateway processes; Redis is real.
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { Redis } from 'ioredis';
import { joinFleet, type FleetMembership } from '../../../gateway/rate-limit/fleet-share.ts';
import { createRedisClient, waitForRedis } from '../../../shared/redis.ts';
import { countsAfterAJoin, listening } from '../../support/fleet-watch.ts';
import { startDelayProxy, type DelayProxy } from '../../support/delay-proxy.ts';
import { startOwnRedis, type OwnRedis } from '../../support/redis-server.ts';

const log = pino({ level: 'silent' });
const clients: Redis[] = [];
const memberships: FleetMembership[] = [];
const servers: OwnRedis[] = [];
const proxies: DelayProxy[] = [];
afterAll(async () => {
  for (const membership of memberships) await membership.leave();
  for (const client of clients) client.disconnect();
  for (const server of servers) await server.stop();
  for (const proxy of proxies) await proxy.close();
});

async function connect(keyPrefix: string, url = inject('redisUrl')): Promise<Redis> {
  const client = createRedisClient({ url, keyPrefix, commandTimeoutMs: 2000 });
  client.on('error', () => {});
  clients.push(client);
  expect(await waitForRedis(client)).toBe(true);
  return client;
}

async function gateway(keyPrefix: string, url?: string): Promise<FleetMembership> {
  const membership = joinFleet(await connect(keyPrefix, url), () => 1, log);
  memberships.push(membership);
  return membership;
}

describe('a join is known to the fleet at once', () => {
  it('the first gateway counts the second well before its own next heartbeat', async () => {
    const prefix = `${inject('redisPrefix')}${randomUUID()}:`;
    const observer = await connect(prefix);
    const join = () => gateway(prefix);
    expect(await countsAfterAJoin({ observer, join }), 'within 300 ms of the join').toEqual({
      known: true,
      first: 2,
      second: 2,
      listening: true,
    });
  });

  it('a join published while the first was not subscribed is read when it subscribes again', async () => {
    // A server of the test's own: its listening connections are cut, nobody else's.
    const own = await startOwnRedis();
    servers.push(own);
    const prefix = `t${randomUUID()}:`;
    const observer = await connect(prefix, own.url);
    const beforeTheJoin = () => observer.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    const join = () => gateway(prefix, own.url);
    expect(await countsAfterAJoin({ observer, join, beforeTheJoin }), 'within 300 ms of the join').toEqual({
      known: true,
      first: 2,
      second: 2,
      listening: true,
    });
  });

  it("a heartbeat's answer counted before the join does not undo it", async () => {
    const prefix = `${inject('redisPrefix')}${randomUUID()}:`;
    const redis = new URL(inject('redisUrl'));
    const direct = { host: redis.hostname, port: Number(redis.port || 6379) };
    // The first gateway's commands take 400 ms each way; what it hears comes directly: the
    // answer to a heartbeat made before the join arrives after the join's message.
    const proxy = await startDelayProxy(direct, 400);
    proxies.push(proxy);
    const slow = new URL(redis);
    slow.hostname = proxy.host;
    slow.port = String(proxy.port);
    const observer = await connect(prefix);
    let joined = 0;
    const join = async () => {
      if (joined++ > 0) return gateway(prefix);
      const commands = await connect(prefix, slow.href);
      // Read when its listening connection is made (shared/redis.ts createSubscriber).
      Object.assign(commands.options, direct);
      const membership = joinFleet(commands, () => 1, log);
      memberships.push(membership);
      return membership;
    };
    expect(await countsAfterAJoin({ observer, join, holdMs: 1000 }), 'from the join for 1.3 s').toEqual({
      known: true,
      first: 2,
      second: 2,
      listening: true,
    });
  });
});

describe('leaving the fleet', () => {
  it('does not wait on a Redis that has gone silent', async () => {
    const own = await startOwnRedis();
    servers.push(own);
    const prefix = `t${randomUUID()}:`;
    const observer = await connect(prefix, own.url);
    const membership = await gateway(prefix, own.url);
    expect(await listening(observer, `${prefix}rl:fleet-joined`, 1, 3000)).toBe(true);
    own.freeze();
    try {
      const left = membership.leave().then(() => 'left');
      const waiting = new Promise((r) => setTimeout(r, 5000, 'still leaving after 5 s'));
      // The ZREM of its heartbeat waits out the command timeout (2 s here), nothing longer.
      expect(await Promise.race([left, waiting])).toBe('left');
    } finally {
      own.thaw();
    }
  });
});
