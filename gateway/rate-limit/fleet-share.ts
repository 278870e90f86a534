/**
 * How many gateways share the limits, so that a gateway that cannot reach Redis counts its
 * share of a limit rather than the whole of it (docs/scaling.md states the bound this gives).
 *
 * Every gateway process sharing a Redis connection heartbeats into one sorted set, scored by
 * Redis's own clock (no clock skew between hosts matters): members older than `expiryMs` are
 * dropped, and the set's size is the live fleet. The last size read is kept: through an
 * outage it is what the share is computed from. Before the first heartbeat is answered, and
 * whenever heartbeats count fewer, the operator's `floor` (`rateLimits.expectedGateways`)
 * stands: a gateway that starts during an outage knows nothing else.
 *
 * One process is one member, however many limiters it makes on one connection (a reload makes
 * a new one): membership is per Redis client, counted by users.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { RedisClient } from '../../shared/redis.ts';

export interface FleetMembership {
  /** Live gateways as last seen, at least the floor; never 0. */
  size(): number;
  /** Stops this user's share of the heartbeat; the last user leaves the set. */
  leave(): Promise<void>;
}

/** Every 2 s: a new or departed gateway changes the shares within a few seconds. */
export const HEARTBEAT_MS = 2000;
/** A gateway missing three heartbeats and a half is no longer counted. */
export const HEARTBEAT_EXPIRY_MS = 7000;
const FLEET_KEY = 'rl:fleet';
const COMMAND = 'porticoFleetHeartbeat';
const SCRIPT = `
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('zadd', KEYS[1], now, ARGV[1])
redis.call('zremrangebyscore', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('pexpire', KEYS[1], ARGV[2])
return redis.call('zcard', KEYS[1])`;

type HeartbeatRedis = RedisClient & { [COMMAND](key: string, id: string, expiryMs: number): Promise<number> };

interface Member {
  users: number;
  seen: number;
  timer: NodeJS.Timeout;
  id: string;
}

const members = new WeakMap<RedisClient, Member>();

function join(redis: RedisClient): Member {
  const known = members.get(redis);
  if (known !== undefined) return known;
  const client = redis as HeartbeatRedis;
  if (typeof client[COMMAND] !== 'function') redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: SCRIPT });
  const member: Member = {
    users: 0,
    seen: 0,
    id: `${hostname()}:${process.pid}:${randomUUID()}`,
    timer: undefined!,
  };
  const beat = () => {
    // A failed heartbeat changes nothing: the last size read stands through the outage.
    client[COMMAND](FLEET_KEY, member.id, HEARTBEAT_EXPIRY_MS).then(
      (size) => {
        member.seen = Number(size);
      },
      () => {},
    );
  };
  member.timer = setInterval(beat, HEARTBEAT_MS).unref();
  beat();
  members.set(redis, member);
  return member;
}

export function joinFleet(redis: RedisClient, floor: () => number): FleetMembership {
  const member = join(redis);
  member.users += 1;
  let left = false;
  return {
    size: () => Math.max(member.seen, floor(), 1),
    async leave() {
      if (left) return;
      left = true;
      member.users -= 1;
      if (member.users > 0) return;
      clearInterval(member.timer);
      members.delete(redis);
      // Leaving at once frees the share for the others; if Redis is gone, expiry does it.
      await redis.zrem(FLEET_KEY, member.id).catch(() => {});
    },
  };
}

/** What one gateway may admit on its own: its share of `limit`, at least one request. */
export function shareOf(limit: number, fleetSize: number): number {
  return Math.max(1, Math.floor(limit / fleetSize));
}
