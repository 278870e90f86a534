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
 * A join is known to every gateway at once, not at its next heartbeat: the heartbeat that adds
 * a gateway to the set publishes the new size, and each gateway that hears it counts at least
 * that many (fleet-joins.ts says when a join is heard only at the next heartbeat).
 *
 * One process is one member, however many limiters it makes on one connection (a reload makes
 * a new one): membership is per Redis client, counted by users.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { RedisClient } from '../../shared/redis.ts';
import { fleetJoinChannel, listenForJoins, type FleetJoins } from './fleet-joins.ts';

export interface FleetMembership {
  /** Live gateways as last seen, at least the floor; never 0. */
  size(): number;
  /** Stops this user's share of the heartbeat; the last user leaves the set. */
  leave(): Promise<void>;
}

/**
 * Every 2 s: a departed gateway (or a join not heard) changes the shares within a few seconds.
 * A departure is not announced: a smaller fleet only makes the shares smaller, the safe way.
 */
export const HEARTBEAT_MS = 2000;
/** A gateway missing three heartbeats and a half is no longer counted. */
export const HEARTBEAT_EXPIRY_MS = 7000;
const FLEET_KEY = 'rl:fleet';
const COMMAND = 'porticoFleetHeartbeat';
const SCRIPT = `
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local added = redis.call('zadd', KEYS[1], now, ARGV[1])
redis.call('zremrangebyscore', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('pexpire', KEYS[1], ARGV[2])
local size = redis.call('zcard', KEYS[1])
-- A join (or a return after expiry) is told to every listening gateway in the same step.
if added == 1 then redis.call('publish', ARGV[3], size) end
return size`;

type HeartbeatRedis = RedisClient & {
  [COMMAND](key: string, id: string, expiryMs: number, joinChannel: string): Promise<number>;
};

interface Member {
  users: number;
  seen: number;
  /** Joins heard so far: a heartbeat sent before the last one may have counted before that join. */
  joinsHeard: number;
  timer: NodeJS.Timeout;
  id: string;
  joins: FleetJoins;
}

const members = new WeakMap<RedisClient, Member>();

function join(redis: RedisClient, log: Logger): Member {
  const known = members.get(redis);
  if (known !== undefined) return known;
  const client = redis as HeartbeatRedis;
  if (typeof client[COMMAND] !== 'function') redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: SCRIPT });
  const joinChannel = fleetJoinChannel(redis);
  const member: Member = {
    users: 0,
    seen: 0,
    joinsHeard: 0,
    id: `${hostname()}:${process.pid}:${randomUUID()}`,
    timer: undefined!,
    joins: undefined!,
  };
  const beat = () => {
    const joinsBefore = member.joinsHeard;
    // A failed heartbeat changes nothing: the last size read stands through the outage.
    client[COMMAND](FLEET_KEY, member.id, HEARTBEAT_EXPIRY_MS, joinChannel).then(
      (size) => {
        // Its answer and a join's message come on two connections, in either order: counted
        // before a join heard meanwhile, it may raise the size but not lower it.
        const mayPredateJoin = member.joinsHeard !== joinsBefore;
        member.seen = mayPredateJoin ? Math.max(member.seen, Number(size)) : Number(size);
      },
      () => {},
    );
  };
  member.joins = listenForJoins(redis, log, {
    joined(size) {
      member.joinsHeard += 1;
      member.seen = Math.max(member.seen, size);
    },
    mayHaveMissed: beat,
  });
  member.timer = setInterval(beat, HEARTBEAT_MS).unref();
  beat();
  members.set(redis, member);
  return member;
}

/** `log`: where the join subscription reports its outages (the first user's is kept). */
export function joinFleet(redis: RedisClient, floor: () => number, log: Logger): FleetMembership {
  const member = join(redis, log);
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
      await member.joins.close();
      // Leaving at once frees the share for the others; if Redis is gone, expiry does it.
      await redis.zrem(FLEET_KEY, member.id).catch(() => {});
    },
  };
}

/** What one gateway may admit on its own: its share of `limit`, at least one request. */
export function shareOf(limit: number, fleetSize: number): number {
  return Math.max(1, Math.floor(limit / fleetSize));
}
