/**
 * What `/readyz` checks: every upstream origin accepts a connection, the identity provider's
 * keys are loaded, Redis answers, plus whatever the process adds.
 */
import { pingRedis, type RedisClient } from '../../shared/redis.ts';
import type { Authenticator } from '../identity/authenticate.ts';
import type { Upstreams } from '../upstream/pools.ts';
import type { ReadinessCheck } from './server.ts';

export function readinessChecks(deps: {
  upstreams: Upstreams;
  authenticator?: Authenticator;
  redis?: RedisClient;
  extra?: readonly ReadinessCheck[];
}): ReadinessCheck[] {
  const { upstreams, authenticator, redis } = deps;
  return [
    ...upstreams.origins.map((origin) => ({
      name: `upstream ${origin}`,
      check: (timeoutMs: number) => upstreams.probe(origin, timeoutMs),
    })),
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
