/**
 * The admission bound when the Redis master is lost right after a gateway joins (Sentinel), two
 * gateway processes, `onStoreFailure: memory`: no wait for each gateway to count the fleet
 * (everyGatewayKnowsFleet). The older gateway hears the join announced in the same step as the
 * heartbeat that made it (fleet-share.ts); a gateway that learned it only at its own next
 * heartbeat, which fails while the master is gone, counted a fleet of one through the outage
 * and admitted the whole limit, where its share is half.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForRedis, type RedisClient } from '../../shared/redis.ts';
import { closeAll } from '../support/close-all.ts';
import { startRedisSentinel, type OwnRedisSentinel } from '../support/redis-sentinel.ts';
import { admissionBound, callerLoad, until } from './support/admissions.ts';
import { FAILOVER_TEST_TIMEOUT_MS } from './support/failover-load.ts';
import { freshCustomer, startScaleFixture, type ScaleFixture } from './support/scale-fixture.ts';
import { sentinelGateways, sentinelObserver } from './support/sentinel-gateways.ts';

const LIMIT = 50;
let sentinel: OwnRedisSentinel;
let fixture: ScaleFixture;
let observer: RedisClient | undefined;

beforeAll(async () => {
  // The master stays down 5 s before the sentinels act: long enough for the newer gateway to
  // finish starting and both to admit their shares while it is gone.
  [sentinel, fixture] = await Promise.all([startRedisSentinel({ downAfterMs: 5000 }), startScaleFixture()]);
});
afterAll(async () => {
  observer?.disconnect();
  await closeAll(fixture?.close(), sentinel?.stop());
});

describe('the Redis master is lost right after a gateway joins (Sentinel)', () => {
  it(
    'two gateways stay within the bound: limit + one share each',
    async () => {
      const { prefix, env, rateLimits } = sentinelGateways(sentinel, LIMIT);
      const older = await fixture.gateway(rateLimits, env);
      observer = sentinelObserver(sentinel, prefix);
      expect(await waitForRedis(observer, 10_000)).toBe(true);
      const fleet = observer;
      expect(await until(async () => (await fleet.zcard('rl:fleet')) === 1, 8000)).toBe(true);

      // The master goes as soon as the newer gateway's first heartbeat has listed it.
      const starting = fixture.gateway(rateLimits, env);
      let listed = false;
      for (const deadline = Date.now() + 30_000; !listed && Date.now() < deadline;) {
        listed = (await fleet.zcard('rl:fleet').catch(() => 0)) === 2;
        if (!listed) await new Promise((r) => setTimeout(r, 5));
      }
      const killedAt = Date.now();
      await sentinel.master.kill();
      expect(listed).toBe(true);
      const newer = await starting;
      const gateways = [older, newer];
      const since = () => `${((Date.now() - killedAt) / 1000).toFixed(1)} s`;
      const newerReady = since();

      // Traffic starts once the master is gone: the worst case (both shares during the outage,
      // then the limit again on the promoted replica, which never saw those counts).
      let running = true;
      const statuses: number[] = [];
      const customer = freshCustomer();
      const load = callerLoad(
        fixture,
        gateways,
        `Bearer ${await fixture.token(customer)}`,
        () => running,
        statuses,
      );
      const promoted = await until(
        async () => (await sentinel.currentMasterPort()) === sentinel.replica.port,
        30_000,
      );
      const promotedAfter = since();
      // Until the promoted replica has counted the whole limit too, and refused a little.
      const counted = await until(
        async () => (await fleet.get(`rl:p:default:60:${customer}`)) === String(LIMIT),
        20_000,
      );
      await new Promise((r) => setTimeout(r, 500));
      running = false;
      const { errors } = await load;
      expect(promoted).toBe(true);
      expect(counted).toBe(true);
      const admitted = statuses.filter((s) => s === 200).length;
      const bound = admissionBound(LIMIT, gateways.length);
      console.log(
        `sentinel master lost right after a join (newer ready after ${newerReady}, promoted after ${promotedAfter}, ` +
          `limit counted there: ${counted}, ${since()} of traffic after the kill): ` +
          `limit ${LIMIT}, bound ${bound}; admitted ${admitted} of ${statuses.length}; errors ${errors}`,
      );
      expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
      // The limit was reached, so the bound was tested.
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
      expect(admitted).toBeLessThanOrEqual(bound);
    },
    FAILOVER_TEST_TIMEOUT_MS,
  );
});
