/**
 * The admission bound through the loss of the Redis master (Sentinel), under traffic: two
 * gateway processes, `onStoreFailure: memory`, the default store timeout. While the master is
 * gone each gateway counts its share of the limit (limit ÷ 2, the fleet size heartbeats left
 * in Redis), never the whole limit: the issue measured 100 extra admitted on a limit of 50.
 *
 * Two callers: one that had reached its limit before the kill (the fleet's refusals spend the
 * gateways' shares: it stays at the limit), and one whose traffic starts with the kill (the
 * worst case: both shares during the outage, then the limit again on the promoted replica,
 * which never saw those counts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForRedis, type RedisClient } from '../../shared/redis.ts';
import { closeAll } from '../support/close-all.ts';
import { startRedisSentinel, type OwnRedisSentinel } from '../support/redis-sentinel.ts';
import { callerLoad, everyGatewayKnowsFleet, holdsTheBound, until } from './support/admissions.ts';
import { FAILOVER_TEST_TIMEOUT_MS } from './support/failover-load.ts';
import { freshCustomer, startScaleFixture, type ScaleFixture } from './support/scale-fixture.ts';
import { sentinelGateways, sentinelObserver } from './support/sentinel-gateways.ts';

const LIMIT = 50;
let sentinel: OwnRedisSentinel;
let fixture: ScaleFixture;
let observer: RedisClient | undefined;

beforeAll(async () => {
  [sentinel, fixture] = await Promise.all([startRedisSentinel(), startScaleFixture()]);
});
afterAll(async () => {
  observer?.disconnect();
  await closeAll(fixture?.close(), sentinel?.stop());
});

describe('the Redis master is lost under traffic (Sentinel)', () => {
  it(
    'two gateways stay within the bound: limit + one share each',
    async () => {
      const { prefix, env, rateLimits } = sentinelGateways(sentinel, LIMIT);
      // One after the other: two processes booting at once on a busy machine can miss the
      // harness's start deadline.
      const gateways = [await fixture.gateway(rateLimits, env), await fixture.gateway(rateLimits, env)];
      observer = sentinelObserver(sentinel, prefix);
      expect(await waitForRedis(observer, 10_000)).toBe(true);
      // Both gateways heartbeat: each knows the fleet is two before the master goes (not
      // asserted: the admissions below are what matters, and tell if they did not). The set
      // lists both at the second gateway's first heartbeat, which announces the join to the
      // first (fleet-share.ts); each is asked what it counts all the same.
      const fleet = observer;
      const listed = await until(async () => (await fleet.zcard('rl:fleet')) === 2, 8000);
      const knowsFleet = listed && (await everyGatewayKnowsFleet(gateways, 2, 8000));
      // The replica has the heartbeats too before the master goes.
      await new Promise((r) => setTimeout(r, 500));

      const before = `Bearer ${await fixture.token(freshCustomer())}`;
      const atKill = `Bearer ${await fixture.token(freshCustomer())}`;
      let running = true;
      const beforeStatuses: number[] = [];
      const beforeLoad = callerLoad(fixture, gateways, before, () => running, beforeStatuses);
      // The first caller has been refused (its limit reached) before the master goes.
      expect(await until(() => Promise.resolve(beforeStatuses.includes(429)), 20_000)).toBe(true);
      const killedAt = Date.now();
      await sentinel.master.kill();
      // Only once the master is gone: a count it took and had not replicated yet would be
      // lost with it, and admitted again by the promoted replica (asynchronous replication,
      // outside the bound: docs/scaling.md).
      const atKillLoad = callerLoad(fixture, gateways, atKill, () => running);
      const promoted = await until(
        async () => (await sentinel.currentMasterPort()) === sentinel.replica.port,
        30_000,
      );
      // Traffic goes on a while on the promoted replica: the limit holds there too.
      await new Promise((r) => setTimeout(r, 3000));
      running = false;
      const [one, two] = await Promise.all([beforeLoad, atKillLoad]);
      const seconds = ((Date.now() - killedAt) / 1000).toFixed(1);
      expect(promoted).toBe(true);
      holdsTheBound(
        `sentinel master lost (fleet of 2 known: ${knowsFleet}, promoted: ${promoted}, ${seconds} s of traffic after the kill)`,
        LIMIT,
        gateways.length,
        { before: one, after: two },
      );
    },
    FAILOVER_TEST_TIMEOUT_MS,
  );
});
