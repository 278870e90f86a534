/**
 * Redis deployments that require a password, as managed ones do: a real 6-node cluster whose
 * nodes all require one (REDIS_PASSWORD), and a Sentinel setup whose master and replica require
 * one and whose sentinels require another (REDIS_SENTINEL_PASSWORD). Gateways given the
 * passwords count exactly and hear each other's invalidations; a gateway without them is never
 * ready and never lets a request through uncounted.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { redisTargetFromEnv } from '../../shared/redis.ts';
import { startRedisCluster, type OwnRedisCluster } from '../support/redis-cluster.ts';
import { startRedisSentinel, type OwnRedisSentinel } from '../support/redis-sentinel.ts';
import { pastTheLimit, spread, twoGateways } from './support/failover-load.ts';
import {
  freshCustomer,
  invalidationCrosses,
  LIMIT,
  policy,
  startScaleFixture,
  type ScaleFixture,
} from './support/scale-fixture.ts';
import { closeAll } from '../support/close-all.ts';

const PASSWORD = `data-${randomUUID()}`;
const SENTINEL_PASSWORD = `sentinels-${randomUUID()}`;

let cluster: OwnRedisCluster;
let sentinel: OwnRedisSentinel;
let fixture: ScaleFixture;

beforeAll(async () => {
  [cluster, sentinel, fixture] = await Promise.all([
    startRedisCluster({ password: PASSWORD }),
    startRedisSentinel({ password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD }),
    startScaleFixture(),
  ]);
});
afterAll(async () => {
  await closeAll(fixture?.close(), cluster?.stop(), sentinel?.stop());
});

const prefix = () => `${inject('redisPrefix')}${randomUUID()}:`;

describe('Redis that requires a password', () => {
  it('REDIS_PASSWORD reaches every cluster node: exact limits and invalidations across two gateways', async () => {
    const env = {
      REDIS_CLUSTER_NODES: cluster.seeds,
      REDIS_PASSWORD: PASSWORD,
      PORTICO_REDIS_PREFIX: prefix(),
    };
    const gateways = await twoGateways(fixture, env);
    for (const gateway of gateways) await fixture.untilReady(gateway.adminPort, 15_000);
    const statuses = await pastTheLimit(fixture, gateways);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    // The invalidation listener connects to single nodes itself: it needs the password too.
    expect(await invalidationCrosses(fixture, gateways[0], gateways[1])).toContain('fwd=uri-miss');
  }, 60_000);

  it('without the password a cluster gateway is not ready and answers 503, never an uncounted 200', async () => {
    const gateway = await fixture.gateway(policy('deny'), {
      REDIS_CLUSTER_NODES: cluster.seeds,
      PORTICO_REDIS_PREFIX: prefix(),
    });
    await expect(fixture.untilReady(gateway.adminPort, 3000)).rejects.toThrow(/not 200/);
    const statuses = await spread(fixture, [gateway], `Bearer ${await fixture.token(freshCustomer())}`, 5);
    expect(statuses).toEqual([503, 503, 503, 503, 503]);
  }, 30_000);

  it('REDIS_PASSWORD and REDIS_SENTINEL_PASSWORD: the sentinels and the master each get their own', async () => {
    const env = {
      REDIS_SENTINELS: sentinel.addresses,
      REDIS_SENTINEL_NAME: sentinel.name,
      REDIS_PASSWORD: PASSWORD,
      REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
      PORTICO_REDIS_PREFIX: prefix(),
    };
    const gateways = await twoGateways(fixture, env);
    for (const gateway of gateways) await fixture.untilReady(gateway.adminPort, 15_000);
    const statuses = await pastTheLimit(fixture, gateways);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(await invalidationCrosses(fixture, gateways[0], gateways[1])).toContain('fwd=uri-miss');

    // The two passwords swapped: the sentinels refuse the gateway, which is then never ready.
    const swapped = await fixture.gateway(policy('deny'), {
      ...env,
      REDIS_PASSWORD: SENTINEL_PASSWORD,
      REDIS_SENTINEL_PASSWORD: PASSWORD,
      PORTICO_REDIS_PREFIX: prefix(),
    });
    await expect(fixture.untilReady(swapped.adminPort, 3000)).rejects.toThrow(/not 200/);
  }, 60_000);

  it('credentials beside REDIS_URL are refused: they belong in the URL', () => {
    expect(() => redisTargetFromEnv({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_PASSWORD: 'x' })).toThrow(
      /put them in the URL/,
    );
    expect(() =>
      redisTargetFromEnv({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_SENTINEL_PASSWORD: 'x' }),
    ).toThrow(/REDIS_SENTINELS is not/);
  });
});
