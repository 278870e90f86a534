/**
 * What a test sees of the rate-limit fleet from outside, on a Redis connection of its own with
 * the gateways' key prefix: when the last heartbeat was, and who listens for joins. For the
 * tests that a join is known at once (gateway/rate-limit/fleet-share.ts), which must start right
 * after a heartbeat: a join made just before one would be counted by it, and prove nothing.
 */
import type { FleetMembership } from '../../gateway/rate-limit/fleet-share.ts';
import { isCluster, type RedisClient } from '../../shared/redis.ts';

/** The heartbeat set, under the key prefix (fleet-share.ts). */
const FLEET_KEY = 'rl:fleet';

/** Polls `condition` every 10 ms; false after `timeoutMs`. */
async function within(condition: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}

/** Redis's clock in ms, the one heartbeats are scored by. */
async function redisNow(observer: RedisClient): Promise<number> {
  const [seconds, micros] = await observer.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * Resolves within `withinMs` of a heartbeat of the fleet (false after 2 heartbeat intervals):
 * the gateways already listed then beat again only about 2 s later.
 */
export function justAfterHeartbeat(observer: RedisClient, withinMs = 50): Promise<boolean> {
  return within(async () => {
    const newest = await observer.zrange(FLEET_KEY, '-1', '-1', 'WITHSCORES');
    if (newest.length < 2) return false;
    return (await redisNow(observer)) - Number(newest[1]) < withinMs;
  }, 4500);
}

/**
 * Whether `count` connections listen on `channel` (the full name, prefix included), within
 * `timeoutMs`. In a cluster each node counts only its own listeners: they are summed.
 */
export function listening(
  observer: RedisClient,
  channel: string,
  count: number,
  timeoutMs: number,
): Promise<boolean> {
  const nodes = isCluster(observer) ? observer.nodes('all') : [observer];
  return within(async () => {
    const each = await Promise.all(
      nodes.map(async (node) => {
        const [, listeners] = (await node.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
        return Number(listeners);
      }),
    );
    return each.reduce((sum, n) => sum + n, 0) >= count;
  }, timeoutMs);
}

/** Whether `condition` holds within `timeoutMs`, polled every 10 ms. */
export function soon(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  return within(() => Promise.resolve(condition()), timeoutMs);
}

/** What each of two gateways counts 300 ms after the second joined, and whether the first listened. */
export interface AfterAJoin {
  known: boolean;
  /** The least the first counted from the moment it counted two, through `holdMs` more. */
  first: number;
  second: number;
  listening: boolean;
}

export interface JoinScenario {
  /** The gateways' key prefix; `join` makes a gateway's membership of the fleet. */
  observer: RedisClient;
  join: () => Promise<FleetMembership>;
  /** What happens between the first's heartbeat and the second's join. */
  beforeTheJoin?: () => Promise<unknown>;
  /** How long the first must keep counting two once it does. */
  holdMs?: number;
}

/**
 * The first gateway joins, and listens for joins; right after one of its heartbeats, the second
 * joins: what each counts within 300 ms, well before the first's next heartbeat.
 */
export async function countsAfterAJoin(scenario: JoinScenario): Promise<AfterAJoin> {
  const { observer, join, beforeTheJoin, holdMs = 0 } = scenario;
  const first = await join();
  // Reported, not awaited for ever: the counts say anyway whether the first heard the join.
  const heard = await listening(observer, `${observer.options.keyPrefix ?? ''}rl:fleet-joined`, 1, 3000);
  if (!(await justAfterHeartbeat(observer))) throw new Error('no heartbeat seen in the fleet set');
  await beforeTheJoin?.();
  const second = await join();
  const known = await soon(() => first.size() === 2, 300);
  let least = first.size();
  const until = Date.now() + holdMs;
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, 10));
    least = Math.min(least, first.size());
  }
  return { known, first: least, second: second.size(), listening: heard };
}
