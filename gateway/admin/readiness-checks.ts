/**
 * What `/readyz` checks: each route has an upstream target to send to (upstream-readiness.ts), the identity provider's
 * keys are loaded, Redis answers, plus whatever the process adds.
 */
import { pingRedis, type RedisClient } from '../../shared/redis.ts';
import type { Authenticator } from '../identity/authenticate.ts';
import type { Upstreams } from '../upstream/pools.ts';
import type { RouteUpstreams } from '../upstream/route-upstreams.ts';
import type { ReadinessCheck } from './server.ts';
import { upstreamReadinessChecks } from './upstream-readiness.ts';

export function readinessChecks(deps: {
  upstreams: Upstreams;
  routeUpstreams: RouteUpstreams;
  authenticator?: Authenticator;
  redis?: RedisClient;
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
    ...(redis === undefined ? [] : [redisCheck(redis)]),
    ...(deps.extra ?? []),
  ];
}

/**
 * Redis answers within the readiness probe's time. A gateway with Redis down still serves
 * (limits fall back as configured) but reports not ready, so operators see it.
 */
function redisCheck(redis: RedisClient): ReadinessCheck {
  return {
    name: 'redis',
    check: async (timeoutMs) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          pingRedis(redis),
          new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs))),
        ]);
        return { ok: true, detail: 'PONG' };
      } catch (error) {
        return { ok: false, detail: `redis: ${(error as Error).message}` };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
