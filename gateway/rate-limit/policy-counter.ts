/**
 * Where a policy's count is kept, and what a store failure does to it: Redis (exact across the
 * fleet), the process's memory (no Redis configured: the whole limit), or, when Redis fails
 * and `onStoreFailure: memory`, the process's memory against its share of the limit
 * (fleet-share.ts), never the whole limit. docs/scaling.md states the bound this gives.
 *
 * A count that would pass the limit is not added, in any store: a refused request is charged
 * to no window (and a caller that must refuse for another policy's sake gives back with
 * negative points).
 */
import { isCluster, type RedisClient } from '../../shared/redis.ts';
import type { CountingConnection } from './counting-connection.ts';
import { RateLimiterMemory, RateLimiterRes } from './memory-limiter-parts.ts';
import {
  durationSeconds,
  type RateLimitPolicyConfig,
  type RateLimitsConfig,
} from '../config/schema/rate-limit.ts';
import { shareOf, type FleetMembership } from './fleet-share.ts';
import { createRedisCounter, type Counted as WindowCount, type RedisCounter } from './redis-counter.ts';
import type { StoreFailureLog } from './store-failure-log.ts';

export interface CompiledPolicy {
  config: RateLimitPolicyConfig;
  windowSeconds: number;
  /** Prefix of the policy's counter keys, in memory and in Redis. */
  keyPrefix: string;
  /** The whole limit, in this process: the store when no Redis is configured. */
  memory: RateLimiterMemory;
  /** This gateway's share of the limit, while Redis fails (`onStoreFailure: memory`). */
  share: RateLimiterMemory;
  /** `"name";q=LIMIT;w=WINDOW`: fixed per policy, so made once here rather than per answer. */
  policyField: string;
}

export function compilePolicy(policy: RateLimitPolicyConfig, prefix: string): CompiledPolicy {
  const windowSeconds = durationSeconds(policy.window);
  // The window is part of the key: changing it starts fresh counters, changing the limit
  // keeps them (the new limit applies to what was already counted).
  const keyPrefix = `rl:${prefix}${policy.name}:${windowSeconds}`;
  const memory = (name: string) =>
    new RateLimiterMemory({ keyPrefix: name, points: policy.limit, duration: windowSeconds });
  return {
    config: policy,
    windowSeconds,
    keyPrefix,
    memory: memory(keyPrefix),
    share: memory(`share:${keyPrefix}`),
    policyField: `"${policy.name}";q=${policy.limit};w=${windowSeconds}`,
  };
}

export type StoreState = 'redis' | 'memory' | 'none';

/** A policy's count after this request, the limit it was held to, when its window ends, and where. */
export type Counted =
  | (WindowCount & { limit: number; store: Exclude<StoreState, 'none'> })
  /** The store failed and the failure policy counts nowhere else. */
  | { failed: true };

/** True when `counted` added this request to a window (and so a refusal must give it back). */
export function added(counted: Counted): counted is Exclude<Counted, { failed: true }> {
  return !('failed' in counted) && counted.consumed <= counted.limit;
}

/** Counts in a process's own window, adding nothing past `limit`; negative points give back. */
async function countInMemory(window: RateLimiterMemory, key: string, points: number, limit: number) {
  let res: RateLimiterRes;
  try {
    res = points > 0 ? await window.consume(key, points) : await window.reward(key, -points);
  } catch (error) {
    // rate-limiter-flexible rejects with the result when its own limit is passed.
    if (!(error instanceof RateLimiterRes)) throw error;
    res = error;
  }
  if (points > 0 && res.consumedPoints > limit) await window.reward(key, points);
  return { consumed: res.consumedPoints, msBeforeNext: res.msBeforeNext };
}

export class PolicyCounter {
  failures = 0;
  lastFailureAt = 0;
  readonly #counter: RedisCounter | undefined;
  /** In a cluster the counted key is the hash tag: a policy's counters spread over the slots. */
  readonly #tagged: boolean;
  readonly #fleet: FleetMembership | undefined;
  readonly #failureLog: StoreFailureLog | undefined;

  /** Counting on the shared connection, while the counter's own is not ready. */
  readonly #shared: RedisCounter | undefined;
  readonly #counting: CountingConnection | undefined;

  /**
   * `shared`: the process's Redis connection, when Redis is configured; `counting`: the
   * counter's own connection to it (counting-connection.ts).
   */
  constructor(
    shared: RedisClient | undefined,
    counting: CountingConnection | undefined,
    fleet: FleetMembership | undefined,
    failureLog: StoreFailureLog | undefined,
  ) {
    this.#counter =
      counting === undefined ? undefined : createRedisCounter(counting.redis, counting.deadlineMs);
    this.#shared = shared === undefined ? undefined : createRedisCounter(shared);
    this.#counting = counting;
    this.#tagged = shared !== undefined && isCluster(shared);
    this.#fleet = fleet;
    this.#failureLog = failureLog;
  }

  /** The Redis key of `key`'s counter in `policy` (outside a cluster, rate-limiter-flexible's). */
  redisKey(policy: CompiledPolicy, key: string): string {
    return this.#tagged ? `${policy.keyPrefix}:{${key}}` : `${policy.keyPrefix}:${key}`;
  }

  /**
   * Counts `points` for `key` in `policy`; never throws. `onFailure` is the failure policy
   * (the failed-authentication counter passes `memory` whatever the operator chose). `store`
   * names where a give-back must go: where the count was made.
   */
  async count(
    policy: CompiledPolicy,
    key: string,
    points: number,
    onFailure: RateLimitsConfig['onStoreFailure'],
    store?: Exclude<StoreState, 'none'>,
  ): Promise<Counted> {
    const limit = policy.config.limit;
    if (this.#counter === undefined) {
      const counted = await countInMemory(policy.memory, key, points, limit);
      return { ...counted, limit, store: 'memory' };
    }
    if (store !== 'memory') {
      try {
        const counter = this.#counting?.redis.status === 'ready' ? this.#counter : this.#shared!;
        const counted = await counter.add(this.redisKey(policy, key), policy.windowSeconds, points, limit);
        // The fleet has used the whole limit: should Redis fail before this window ends, this
        // gateway's share of it is spent too. Only a refusal pays for this (the hot path does
        // not), and it keeps a failover right after a limit was reached at the limit.
        if (counted.consumed > limit)
          await policy.share.block(key, Math.max(1, Math.ceil(counted.msBeforeNext / 1000)));
        return { ...counted, limit, store: 'redis' };
      } catch (error) {
        this.failures++;
        this.lastFailureAt = Date.now();
        this.#failureLog?.report(policy.config.name, error);
        if (onFailure !== 'memory' || store === 'redis') return { failed: true };
      }
    }
    const share = shareOf(limit, this.#fleet?.size() ?? 1);
    const counted = await countInMemory(policy.share, key, points, share);
    return { ...counted, limit: share, store: 'memory' };
  }
}
