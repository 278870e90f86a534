/**
 * Counting requests against the configured policies, in Redis (exact across gateway replicas:
 * one atomic INCR-with-expiry per policy and key) or in memory.
 *
 * Being over a limit is a result, not an exception. A store failure is an error with an
 * explicit policy (`onStoreFailure`), decided here and nowhere else.
 */
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Principal } from '../../shared/principal.ts';
import { durationSeconds } from './config-schema.ts';
import type { RateLimitPolicyConfig, RateLimitsConfig } from './config-schema.ts';

export interface RateLimitSubject {
  method: string;
  path: string;
  clientIp: string;
  principal?: Principal;
}

/** Where one policy stands for this request, for the RateLimit headers. */
export interface PolicyOutcome {
  name: string;
  limit: number;
  windowSeconds: number;
  remaining: number;
  resetSeconds: number;
  exceeded: boolean;
}

export type StoreState = 'redis' | 'memory' | 'none';

export type RateLimitDecision =
  | { kind: 'allowed'; outcomes: PolicyOutcome[]; store: StoreState }
  | { kind: 'limited'; outcomes: PolicyOutcome[]; retryAfterSeconds: number; store: StoreState }
  /** The store failed and `onStoreFailure: deny`. */
  | { kind: 'unavailable'; store: StoreState };

export interface RateLimiterStatus {
  backend: 'redis' | 'memory';
  /** Redis configured but failing now (or within the last few seconds). */
  degraded: boolean;
  storeFailures: number;
}

export interface RateLimiter {
  check(subject: RateLimitSubject): Promise<RateLimitDecision>;
  /** A 'limited' decision when this address has failed authentication too often, else undefined. */
  checkAuthFailures(clientIp: string): Promise<RateLimitDecision | undefined>;
  recordAuthFailure(clientIp: string): Promise<void>;
  /** Swaps in new policies; requests already counting finish with the old ones. */
  reconfigure(config: RateLimitsConfig): void;
  status(): RateLimiterStatus;
}

interface CompiledPolicy {
  config: RateLimitPolicyConfig;
  windowSeconds: number;
  redis: RateLimiterRedis | undefined;
  memory: RateLimiterMemory;
}

const DEGRADED_FOR_MS = 5000;
/**
 * How long an address whose failed-authentication count was just read from Redis as under the
 * limit is trusted without reading it again. That read is a Redis round trip on every
 * authenticated request (two syscalls, a large share of a proxied request's CPU here). A failure
 * on this replica forgets the address at once, so the throttle stays exact here; what the
 * window can let through is requests from an address that crossed the limit on another replica
 * within the last second, whose credentials are still verified, and whose next failure here is
 * counted and checked again.
 */
const CLEAN_FOR_MS = 1000;

function subjectKey(policy: RateLimitPolicyConfig, subject: RateLimitSubject): string | undefined {
  const p = subject.principal;
  switch (policy.key) {
    case 'ip':
      return subject.clientIp;
    case 'customer':
      return p?.customerId;
    case 'apiKey':
      return p?.authMethod === 'apikey' ? p.keyId : undefined;
    case 'principal':
      // Without a principal (an `auth: none` route) the caller is its address, so that
      // unauthenticated traffic is limited too; `ip:` keeps it apart from `jwt:`/`apikey:` keys.
      return p === undefined ? `ip:${subject.clientIp}` : `${p.authMethod}:${p.keyId ?? p.subject}`;
  }
}

/**
 * Reads a Redis counter without counting. rate-limiter-flexible's `get()` sends a MULTI with
 * GET and PTTL (four commands, a transaction) on every authenticated request, ~5% of the
 * gateway's CPU under load; one GET answers the common case (under the limit), and the reset
 * time, which only a refusal reports, costs a PTTL only then. Same key, same counter.
 */
async function peekRedis(
  redis: Redis,
  limiter: RateLimiterRedis,
  key: string,
  limit: number,
): Promise<RateLimiterRes> {
  const rlKey = limiter.getKey(key);
  const stored = await redis.get(rlKey);
  if (stored === null) return new RateLimiterRes(limit, 0, 0, false);
  const consumed = Number.parseInt(stored, 10);
  const msBeforeNext = consumed >= limit ? await redis.pttl(rlKey) : 0;
  return new RateLimiterRes(Math.max(limit - consumed, 0), msBeforeNext, consumed, false);
}

function matches(policy: RateLimitPolicyConfig, subject: RateLimitSubject): boolean {
  const match = policy.match;
  if (match === undefined) return true;
  if (match.methods !== undefined && !match.methods.includes(subject.method)) return false;
  if (match.path !== undefined) {
    const prefix = match.path.endsWith('/') ? match.path.slice(0, -1) : match.path;
    if (subject.path !== prefix && !subject.path.startsWith(`${prefix}/`)) return false;
  }
  return true;
}

export function createRateLimiter(
  initial: RateLimitsConfig,
  deps: { redis?: Redis | undefined; onStoreError?: (error: unknown) => void },
): RateLimiter {
  const { redis } = deps;
  let config = initial;
  let storeFailures = 0;
  let lastFailureAt = 0;

  const compile = (policy: RateLimitPolicyConfig, prefix: string): CompiledPolicy => {
    const windowSeconds = durationSeconds(policy.window);
    // The window is part of the key: changing it starts fresh counters, changing the limit
    // keeps them (the new limit applies to what was already counted).
    const keyPrefix = `rl:${prefix}${policy.name}:${windowSeconds}`;
    return {
      config: policy,
      windowSeconds,
      redis:
        redis === undefined
          ? undefined
          : new RateLimiterRedis({
              storeClient: redis,
              keyPrefix,
              points: policy.limit,
              duration: windowSeconds,
            }),
      memory: new RateLimiterMemory({ keyPrefix, points: policy.limit, duration: windowSeconds }),
    };
  };
  const compileAll = (c: RateLimitsConfig) => ({
    policies: c.policies.map((p) => compile(p, 'p:')),
    authFailures: compile({ name: 'auth-failures', key: 'ip', ...c.authFailures }, 'builtin:'),
  });
  let compiled = compileAll(config);
  const recentlyClean = new LRUCache<string, true>({ max: 10_000, ttl: CLEAN_FOR_MS });

  type Counted = { res: RateLimiterRes; store: StoreState } | { failed: true };

  /**
   * Counts (or, with `peek`, reads) one key in one policy; never throws. `memoryOnFailure`
   * overrides `onStoreFailure` for the built-in failed-authentication counter, which must keep
   * throttling whatever the operator chose for ordinary traffic.
   */
  async function count(
    policy: CompiledPolicy,
    key: string,
    peek = false,
    memoryOnFailure = false,
  ): Promise<Counted> {
    const run = async (limiter: RateLimiterRedis | RateLimiterMemory): Promise<RateLimiterRes> => {
      try {
        if (!peek) return await limiter.consume(key, 1);
        if (limiter instanceof RateLimiterRedis && redis !== undefined)
          return await peekRedis(redis, limiter, key, policy.config.limit);
        return (await limiter.get(key)) ?? new RateLimiterRes(policy.config.limit, 0, 0, false);
      } catch (error) {
        if (error instanceof RateLimiterRes) return error;
        throw error;
      }
    };
    if (policy.redis !== undefined) {
      try {
        return { res: await run(policy.redis), store: 'redis' };
      } catch (error) {
        storeFailures++;
        lastFailureAt = Date.now();
        deps.onStoreError?.(error);
        if (config.onStoreFailure !== 'memory' && !memoryOnFailure) return { failed: true };
      }
    }
    return { res: await run(policy.memory), store: 'memory' };
  }

  function outcome(policy: CompiledPolicy, res: RateLimiterRes): PolicyOutcome {
    return {
      name: policy.config.name,
      limit: policy.config.limit,
      windowSeconds: policy.windowSeconds,
      remaining: Math.max(policy.config.limit - res.consumedPoints, 0),
      resetSeconds: Math.max(Math.ceil(res.msBeforeNext / 1000), 0),
      exceeded: res.consumedPoints > policy.config.limit,
    };
  }

  function decide(results: [CompiledPolicy, Counted][]): RateLimitDecision {
    const outcomes: PolicyOutcome[] = [];
    let store: StoreState = 'none';
    for (const [policy, counted] of results) {
      if ('failed' in counted) {
        if (config.onStoreFailure === 'deny') return { kind: 'unavailable', store: 'none' };
        continue; // allow: this policy says nothing about this request
      }
      store = counted.store;
      outcomes.push(outcome(policy, counted.res));
    }
    const exceeded = outcomes.filter((o) => o.exceeded);
    if (exceeded.length === 0) return { kind: 'allowed', outcomes, store };
    return {
      kind: 'limited',
      outcomes,
      store,
      // The request may be retried once every exceeded window has reset.
      retryAfterSeconds: Math.max(1, ...exceeded.map((o) => o.resetSeconds)),
    };
  }

  return {
    async check(subject) {
      const applicable = compiled.policies
        .filter((p) => matches(p.config, subject))
        .map((p) => [p, subjectKey(p.config, subject)] as const)
        .filter((entry): entry is readonly [CompiledPolicy, string] => entry[1] !== undefined);
      const results = await Promise.all(
        applicable.map(
          async ([policy, key]) => [policy, await count(policy, key)] as [CompiledPolicy, Counted],
        ),
      );
      return decide(results);
    },

    async checkAuthFailures(clientIp) {
      if (recentlyClean.has(clientIp)) return undefined;
      const policy = compiled.authFailures;
      const counted = await count(policy, clientIp, true, true);
      if ('failed' in counted) return undefined;
      if (counted.res.consumedPoints < policy.config.limit) {
        if (counted.store === 'redis') recentlyClean.set(clientIp, true);
        return undefined;
      }
      const o = { ...outcome(policy, counted.res), exceeded: true };
      return {
        kind: 'limited',
        outcomes: [o],
        store: counted.store,
        retryAfterSeconds: Math.max(1, o.resetSeconds),
      };
    },

    async recordAuthFailure(clientIp) {
      recentlyClean.delete(clientIp);
      await count(compiled.authFailures, clientIp, false, true);
    },

    reconfigure(next) {
      recentlyClean.clear();
      const nextCompiled = compileAll(next);
      config = next;
      compiled = nextCompiled;
    },

    status() {
      return {
        backend: redis === undefined ? 'memory' : 'redis',
        degraded:
          redis !== undefined && (redis.status !== 'ready' || Date.now() - lastFailureAt < DEGRADED_FOR_MS),
        storeFailures,
      };
    },
  };
}
