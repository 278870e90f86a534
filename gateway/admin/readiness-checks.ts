/**
 * What `/readyz` checks: each route has an upstream target to send to (upstream-readiness.ts), the identity provider's
 * keys are loaded, Redis answers, plus whatever the process adds. Which failures make the
 * gateway NotReady and which only degraded: readiness.ts.
 */
import { pingRedis, type RedisClient } from '../../shared/redis.ts';
import type { Authenticator } from '../identity/authenticate.ts';
import type { RateLimiterStatus } from '../rate-limit/limiter.ts';
import type { Upstreams } from '../upstream/pools.ts';
import type { RouteUpstreams } from '../upstream/route-upstreams.ts';
import type { ReadinessCheck } from './server.ts';
import { upstreamReadinessChecks } from './upstream-readiness.ts';

export function readinessChecks(deps: {
  upstreams: Upstreams;
  routeUpstreams: RouteUpstreams;
  authenticator?: Authenticator;
  redis?: RedisClient;
  /** The rate limiter's view of its store: failing lately, and what a failure does. */
  rateLimitStore?: () => Pick<RateLimiterStatus, 'degraded' | 'onStoreFailure'>;
  extra?: readonly ReadinessCheck[];
}): ReadinessCheck[] {
  const { upstreams, authenticator, redis } = deps;
  return [
    ...upstreamReadinessChecks(upstreams, deps.routeUpstreams),
    ...(authenticator === undefined
      ? []
      : [
          {
            name: 'identity provider keys',
            check: () =>
              Promise.resolve(
                authenticator.ready()
                  ? { ok: true, detail: 'signing keys loaded' }
                  : { ok: false, detail: 'signing keys not loaded' },
              ),
          },
        ]),
    ...(redis === undefined ? [] : [redisCheck(redis, deps.rateLimitStore)]),
    ...(deps.extra ?? []),
  ];
}

/**
 * Redis answers within the readiness probe's time (every master of a cluster), and the rate
 * limiter's own commands have not failed lately (a round trip slower than `storeTimeoutMs`
 * fails those while a PING still passes). A failure is NotReady only under
 * `onStoreFailure: deny`, which refuses; under `memory` or `allow` the gateway still serves,
 * degraded: limits counted per gateway (or not at all), API keys refused with 503 while their
 * revocations cannot be read.
 */
function redisCheck(
  redis: RedisClient,
  store: (() => Pick<RateLimiterStatus, 'degraded' | 'onStoreFailure'>) | undefined,
): ReadinessCheck {
  return {
    name: 'redis',
    check: async (timeoutMs) => {
      const pinged = await ping(redis, timeoutMs);
      const status = store?.();
      const failing =
        pinged !== undefined
          ? `redis: ${pinged}`
          : status?.degraded === true
            ? 'PONG, but rate-limit commands failed or timed out in the last few seconds'
            : undefined;
      if (failing === undefined) return { ok: true, detail: 'PONG' };
      if (status === undefined) return { ok: false, detail: failing };
      const mode = status.onStoreFailure;
      return mode === 'deny'
        ? {
            ok: false,
            required: true,
            detail: `${failing}; onStoreFailure: deny refuses rate-limited requests (503)`,
          }
        : {
            ok: false,
            required: false,
            detail: `${failing}; serving degraded: onStoreFailure: ${mode} (${mode === 'memory' ? 'limits counted in each gateway against its share' : 'requests not counted'}), API keys refused (503) while revocations cannot be read`,
          };
    },
  };
}

/** Undefined when every node answered PING in time; else why not. */
async function ping(redis: RedisClient, timeoutMs: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      pingRedis(redis),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs))),
    ]);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  } finally {
    clearTimeout(timer);
  }
}
