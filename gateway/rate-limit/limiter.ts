/**
 * Counting requests against the configured policies, in Redis (exact across gateway replicas:
 * one atomic count-within-the-limit per policy and key, sent in batches by redis-counter.ts)
 * or in memory (policy-counter.ts says which, and what a store failure does).
 *
 * Being over a limit is a result, not an exception. A store failure is an error with an
 * explicit policy (`onStoreFailure`), decided here and nowhere else. A request refused by any
 * policy (or by the store) is charged to none: the policies that counted it give it back.
 */
import { pino, type Logger } from 'pino';
import type { Principal } from '../../shared/principal.ts';
import type { RedisClient } from '../../shared/redis.ts';
import { AddressThrottles, type AuthAttempt } from './address-throttles.ts';
import type { RateLimitPolicyConfig, RateLimitsConfig } from '../config/schema/rate-limit.ts';
import { openCountingConnection } from './counting-connection.ts';
import { joinFleet } from './fleet-share.ts';
import { createMostLimited, type LimitedCaller } from './most-limited.ts';
import { outcome, type LimitedDecision, type PolicyOutcome } from './outcomes.ts';
import { added, compilePolicy, PolicyCounter, type CompiledPolicy, type Counted } from './policy-counter.ts';
import type { StoreFailureLog } from './store-failure-log.ts';

export type { StoreState } from './policy-counter.ts';
import type { StoreState } from './policy-counter.ts';

export interface RateLimitSubject {
  method: string;
  path: string;
  clientIp: string;
  principal?: Principal | undefined;
  /** The policies of `scope: route` the request's route names (its `rateLimits`). */
  routePolicies?: readonly string[] | undefined;
}

export type { LimitedDecision, PolicyOutcome } from './outcomes.ts';

export type RateLimitDecision =
  | { kind: 'allowed'; outcomes: PolicyOutcome[]; store: StoreState }
  | LimitedDecision
  /** The store failed and `onStoreFailure: deny`. */
  | { kind: 'unavailable'; store: StoreState };

export interface RateLimiterStatus {
  backend: 'redis' | 'memory';
  /** Redis configured but failing now (or within the last few seconds). */
  degraded: boolean;
  storeFailures: number;
  /**
   * Gateways sharing the limits, as heartbeats in Redis last said (or `expectedGateways`, if
   * more): a store failure leaves each its share of a limit. 1 without Redis.
   */
  fleetSize: number;
  /** What a store failure does now (the policies' `onStoreFailure`): readiness follows it. */
  onStoreFailure: RateLimitsConfig['onStoreFailure'];
}

export type { AuthAttempt } from './address-throttles.ts';

export interface RateLimiter {
  check(subject: RateLimitSubject): Promise<RateLimitDecision>;
  /**
   * Counts an unverified credential from `clientIp` against the failed-authentication limit;
   * `fingerprint` (a digest of the credential) tells a credential that failed before.
   */
  countAuthAttempt(clientIp: string, fingerprint: string): Promise<AuthAttempt>;
  /**
   * Counts a request refused before anyone was identified (no route, no credential) against
   * the anonymous limit of its address: the 429 to answer instead, or undefined.
   */
  countAnonymous(clientIp: string): Promise<LimitedDecision | undefined>;
  /** Swaps in new policies; requests already counting finish with the old ones. */
  reconfigure(config: RateLimitsConfig): void;
  status(): RateLimiterStatus;
  /** The callers refused most since start (bounded memory: most-limited.ts), most first. */
  mostLimited(count: number): LimitedCaller[];
  /** Leaves the fleet (its heartbeat stops) and logs the store failures not yet logged. */
  close(): Promise<void>;
}

const DEGRADED_FOR_MS = 5000;

function subjectKey(
  policy: RateLimitPolicyConfig,
  subject: RateLimitSubject,
  address: string,
): string | undefined {
  const p = subject.principal;
  switch (policy.key) {
    case 'ip':
      return address;
    case 'customer':
      return p?.customerId;
    case 'apiKey':
      return p?.authMethod === 'apikey' ? p.keyId : undefined;
    case 'principal':
      // Without a principal (an `auth: none` route) the caller is its address, so that
      // unauthenticated traffic is limited too; `ip:` keeps it apart from `jwt:`/`apikey:` keys.
      return p === undefined ? `ip:${address}` : `${p.authMethod}:${p.keyId ?? p.subject}`;
  }
}

/** Who a refusal is counted against on the dashboard: an identifier, never a credential. */
function callerOf(subject: RateLimitSubject, address: string): string {
  const p = subject.principal;
  return p === undefined ? `ip:${address}` : `${p.authMethod}:${p.keyId ?? p.subject}`;
}

function matches(policy: RateLimitPolicyConfig, subject: RateLimitSubject): boolean {
  if (policy.scope === 'route' && subject.routePolicies?.includes(policy.name) !== true) return false;
  const match = policy.match;
  if (match === undefined) return true;
  if (match.methods !== undefined && !match.methods.includes(subject.method)) return false;
  if (match.path !== undefined) {
    const prefix = match.path.endsWith('/') ? match.path.slice(0, -1) : match.path;
    if (subject.path !== prefix && !subject.path.startsWith(`${prefix}/`)) return false;
  }
  return true;
}

/** `counted[i]` is what `policies[i]` counted. */
function decide(
  policies: readonly CompiledPolicy[],
  counted: readonly Counted[],
  onStoreFailure: RateLimitsConfig['onStoreFailure'],
): RateLimitDecision {
  const outcomes: PolicyOutcome[] = [];
  let store: StoreState = 'none';
  for (let i = 0; i < policies.length; i++) {
    const result = counted[i]!;
    if ('failed' in result) {
      if (onStoreFailure === 'deny') return { kind: 'unavailable', store: 'none' };
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

export interface RateLimiterDeps {
  redis?: RedisClient | undefined;
  /** Where store failures are reported (store-failure-log.ts: one line per policy per interval). */
  storeFailureLog?: StoreFailureLog;
  /** Where the fleet's join subscription reports its outages (silent if none: tests). */
  log?: Logger;
}

export function createRateLimiter(initial: RateLimitsConfig, deps: RateLimiterDeps): RateLimiter {
  const { redis } = deps;
  let config = initial;
  const limitedCallers = createMostLimited();
  const log = deps.log ?? pino({ level: 'silent' });
  const fleet = redis === undefined ? undefined : joinFleet(redis, () => config.expectedGateways, log);
  const counting = redis === undefined ? undefined : openCountingConnection(redis, config.storeTimeoutMs);
  const counter = new PolicyCounter(redis, counting, fleet, deps.storeFailureLog);

  const compileAll = (c: RateLimitsConfig) => ({ policies: c.policies.map((p) => compilePolicy(p, 'p:')) });
  let compiled = compileAll(config);
  const throttles = new AddressThrottles(config, counter, limitedCallers);

  /** A refused request is charged to none of its policies: those that counted it give it back. */
  async function giveBack(policies: CompiledPolicy[], keys: string[], counted: Counted[]): Promise<void> {
    const refunds: Promise<Counted>[] = [];
    counted.forEach((result, i) => {
      if (added(result)) refunds.push(counter.count(policies[i]!, keys[i]!, -1, 'memory', result.store));
    });
    await Promise.all(refunds);
  }

  return {
    async check(subject) {
      const address = throttles.addressOf(subject.clientIp);
      const policies: CompiledPolicy[] = [];
      const keys: string[] = [];
      const counting: Promise<Counted>[] = [];
      const onStoreFailure = config.onStoreFailure;
      for (const policy of compiled.policies) {
        if (!matches(policy.config, subject)) continue;
        const key = subjectKey(policy.config, subject, address);
        if (key === undefined) continue;
        policies.push(policy);
        keys.push(key);
        counting.push(counter.count(policy, key, 1, onStoreFailure));
      }
      // One policy is the common case: its count is awaited without a Promise.all around it.
      const counted = counting.length === 1 ? [await counting[0]!] : await Promise.all(counting);
      const decision = decide(policies, counted, onStoreFailure);
      if (decision.kind !== 'allowed' && counted.length > 1) await giveBack(policies, keys, counted);
      if (decision.kind === 'limited')
        limitedCallers.record(callerOf(subject, address), subject.principal?.customerId);
      return decision;
    },

    countAuthAttempt: (clientIp, fingerprint) => throttles.countAuthAttempt(clientIp, fingerprint),
    countAnonymous: (clientIp) => throttles.countAnonymous(clientIp),

    reconfigure(next) {
      const nextCompiled = compileAll(next);
      throttles.reconfigure(next);
      config = next;
      compiled = nextCompiled;
    },

    status() {
      return {
        backend: redis === undefined ? 'memory' : 'redis',
        degraded:
          redis !== undefined &&
          (redis.status !== 'ready' || Date.now() - counter.lastFailureAt < DEGRADED_FOR_MS),
        storeFailures: counter.failures,
        fleetSize: fleet?.size() ?? 1,
        onStoreFailure: config.onStoreFailure,
      };
    },

    mostLimited: (count) => limitedCallers.top(count),

    async close() {
      deps.storeFailureLog?.close();
      await fleet?.leave();
      counting?.close();
    },
  };
}
