/**
 * Counting requests against the configured policies, in Redis (exact across gateway replicas:
 * one atomic INCR-with-expiry per policy and key, sent in batches by redis-counter.ts) or in
 * memory.
 *
 * Being over a limit is a result, not an exception. A store failure is an error with an
 * explicit policy (`onStoreFailure`), decided here and nowhere else.
 */
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Principal } from '../../shared/principal.ts';
import { isCluster, type RedisClient } from '../../shared/redis.ts';
import { durationSeconds } from './config-schema.ts';
import type { RateLimitPolicyConfig, RateLimitsConfig } from './config-schema.ts';
import { createMostLimited, type LimitedCaller } from './most-limited.ts';
import { createRedisCounter, type Counted as WindowCount, type RedisCounter } from './redis-counter.ts';

export interface RateLimitSubject {
  method: string;
  path: string;
  clientIp: string;
  principal?: Principal | undefined;
}

/** Where one policy stands for this request, for the RateLimit headers. */
export interface PolicyOutcome {
  name: string;
  remaining: number;
  resetSeconds: number;
  exceeded: boolean;
  /**
   * This policy's member of `RateLimit-Policy` (`"name";q=LIMIT;w=WINDOW`), the same on every
   * answer: the limit and window reach the answer through it (headers.ts).
   */
  policyField: string;
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

/**
 * One credential that is not known good, counted against its address before it is verified
 * (atomically: concurrent guesses cannot all pass a read-then-count check).
 */
export interface AuthAttempt {
  /** Set when the address is over its limit: the credential is refused without being verified. */
  readonly refusal: Extract<RateLimitDecision, { kind: 'limited' }> | undefined;
  /** Takes the count back: the credential verified, or could not be judged (issuer down). */
  refund(): Promise<void>;
}

export interface RateLimiter {
  check(subject: RateLimitSubject): Promise<RateLimitDecision>;
  /** Counts an unverified credential from `clientIp` against the failed-authentication limit. */
  countAuthAttempt(clientIp: string): Promise<AuthAttempt>;
  /** Swaps in new policies; requests already counting finish with the old ones. */
  reconfigure(config: RateLimitsConfig): void;
  status(): RateLimiterStatus;
  /** The callers refused most since start (bounded memory: most-limited.ts), most first. */
  mostLimited(count: number): LimitedCaller[];
}

interface CompiledPolicy {
  config: RateLimitPolicyConfig;
  windowSeconds: number;
  /** Prefix of the policy's counter keys in memory, and in Redis outside a cluster. */
  keyPrefix: string;
  /**
   * Prefix of its keys in Redis. In a cluster the policy's part is a hash tag, so that every
   * counter of the policy sits in one slot and one script call counts a turn's batch of it;
   * on one node the keys stay rate-limiter-flexible's (no braces).
   */
  redisKeyPrefix: string;
  memory: RateLimiterMemory;
  /** `"name";q=LIMIT;w=WINDOW`: fixed per policy, so made once here rather than per answer. */
  policyField: string;
}

const DEGRADED_FOR_MS = 5000;

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

/** Who a refusal is counted against on the dashboard: an identifier, never a credential. */
function callerOf(subject: RateLimitSubject): string {
  const p = subject.principal;
  return p === undefined ? `ip:${subject.clientIp}` : `${p.authMethod}:${p.keyId ?? p.subject}`;
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

/** Counts (or, with negative `points`, gives back) in the process's own counters. */
async function countInMemory(policy: CompiledPolicy, key: string, points: number): Promise<RateLimiterRes> {
  try {
    return points > 0 ? await policy.memory.consume(key, points) : await policy.memory.reward(key, -points);
  } catch (error) {
    // rate-limiter-flexible rejects with the result when the limit is passed.
    if (error instanceof RateLimiterRes) return error;
    throw error;
  }
}

export function createRateLimiter(
  initial: RateLimitsConfig,
  deps: { redis?: RedisClient | undefined; onStoreError?: (error: unknown) => void },
): RateLimiter {
  const { redis } = deps;
  let config = initial;
  let storeFailures = 0;
  let lastFailureAt = 0;

  const limitedCallers = createMostLimited();
  const counter: RedisCounter | undefined = redis === undefined ? undefined : createRedisCounter(redis);
  const tagged = redis !== undefined && isCluster(redis);

  const compile = (policy: RateLimitPolicyConfig, prefix: string): CompiledPolicy => {
    const windowSeconds = durationSeconds(policy.window);
    // The window is part of the key: changing it starts fresh counters, changing the limit
    // keeps them (the new limit applies to what was already counted).
    const keyPrefix = `rl:${prefix}${policy.name}:${windowSeconds}`;
    return {
      config: policy,
      windowSeconds,
      keyPrefix,
      redisKeyPrefix: tagged ? `rl:{${prefix}${policy.name}:${windowSeconds}}` : keyPrefix,
      memory: new RateLimiterMemory({ keyPrefix, points: policy.limit, duration: windowSeconds }),
      policyField: `"${policy.name}";q=${policy.limit};w=${windowSeconds}`,
    };
  };
  const compileAll = (c: RateLimitsConfig) => ({
    policies: c.policies.map((p) => compile(p, 'p:')),
    authFailures: compile({ name: 'auth-failures', key: 'ip', ...c.authFailures }, 'builtin:'),
  });
  let compiled = compileAll(config);

  /** A policy's count after this request and when its window ends, and where; or the store failed. */
  type Counted = (WindowCount & { store: StoreState }) | { failed: true };

  /**
   * Counts one key in one policy; never throws. `memoryOnFailure` overrides `onStoreFailure`
   * for the built-in failed-authentication counter, which must keep throttling whatever the
   * operator chose for ordinary traffic. A negative `points` gives back what was counted.
   */
  async function count(
    policy: CompiledPolicy,
    key: string,
    points = 1,
    memoryOnFailure = false,
    store?: StoreState,
  ): Promise<Counted> {
    if (counter !== undefined && store !== 'memory') {
      try {
        // Outside a cluster, the key rate-limiter-flexible's RateLimiterRedis would use.
        const counted = await counter.add(`${policy.redisKeyPrefix}:${key}`, policy.windowSeconds, points);
        return { ...counted, store: 'redis' };
      } catch (error) {
        storeFailures++;
        lastFailureAt = Date.now();
        deps.onStoreError?.(error);
        if ((config.onStoreFailure !== 'memory' && !memoryOnFailure) || store === 'redis')
          return { failed: true };
      }
    }
    const res = await countInMemory(policy, key, points);
    return { consumed: res.consumedPoints, msBeforeNext: res.msBeforeNext, store: 'memory' };
  }

  function outcome(policy: CompiledPolicy, counted: WindowCount): PolicyOutcome {
    return {
      name: policy.config.name,
      remaining: Math.max(policy.config.limit - counted.consumed, 0),
      resetSeconds: Math.max(Math.ceil(counted.msBeforeNext / 1000), 0),
      exceeded: counted.consumed > policy.config.limit,
      policyField: policy.policyField,
    };
  }

  /** `counted[i]` is what `policies[i]` counted. */
  function decide(policies: readonly CompiledPolicy[], counted: readonly Counted[]): RateLimitDecision {
    const outcomes: PolicyOutcome[] = [];
    let store: StoreState = 'none';
    for (let i = 0; i < policies.length; i++) {
      const result = counted[i]!;
      if ('failed' in result) {
        if (config.onStoreFailure === 'deny') return { kind: 'unavailable', store: 'none' };
        continue; // allow: this policy says nothing about this request
      }
      store = result.store;
      outcomes.push(outcome(policies[i]!, result));
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
      const policies: CompiledPolicy[] = [];
      const counting: Promise<Counted>[] = [];
      for (const policy of compiled.policies) {
        if (!matches(policy.config, subject)) continue;
        const key = subjectKey(policy.config, subject);
        if (key === undefined) continue;
        policies.push(policy);
        counting.push(count(policy, key));
      }
      // One policy is the common case: its count is awaited without a Promise.all around it.
      const counted = counting.length === 1 ? [await counting[0]!] : await Promise.all(counting);
      const decision = decide(policies, counted);
      if (decision.kind === 'limited')
        limitedCallers.record(callerOf(subject), subject.principal?.customerId);
      return decision;
    },

    async countAuthAttempt(clientIp) {
      const policy = compiled.authFailures;
      const counted = await count(policy, clientIp, 1, true);
      if ('failed' in counted) return { refusal: undefined, refund: () => Promise.resolve() };
      const o = outcome(policy, counted);
      if (o.exceeded) limitedCallers.record(`ip:${clientIp}`, undefined);
      return {
        refusal: o.exceeded
          ? {
              kind: 'limited',
              outcomes: [o],
              store: counted.store,
              retryAfterSeconds: Math.max(1, o.resetSeconds),
            }
          : undefined,
        // Back to the store that counted it; a failure there leaves one count too many, never too few.
        refund: async () => {
          await count(policy, clientIp, -1, true, counted.store);
        },
      };
    },

    reconfigure(next) {
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

    mostLimited: (count) => limitedCallers.top(count),
  };
}
