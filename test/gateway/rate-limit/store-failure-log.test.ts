/**
 * A Redis outage under traffic is logged once per policy per interval with a count, not once
 * per request (a gateway used to write about 1,170 warnings in 2.3 s): a real gateway in
 * front of a real upstream, its Redis a server of the test's own, stopped.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { request } from 'undici';
import { createRedisClient, waitForRedis } from '../../../shared/redis.ts';
import { startRecordingUpstream, startTestGateway } from '../support/harness.ts';
import { startOwnRedis } from '../../support/redis-server.ts';
import { closeAll } from '../../support/close-all.ts';

const closing: (() => Promise<void>)[] = [];
afterAll(async () => {
  await closeAll(...closing.reverse().map((close) => close()));
});

it('a Redis outage under traffic is one line per policy with the failures counted', async () => {
  const own = await startOwnRedis();
  closing.push(() => own.stop());
  const redis = createRedisClient({ url: own.url, keyPrefix: `t${randomUUID()}:`, commandTimeoutMs: 200 });
  redis.on('error', () => {});
  closing.push(() => Promise.resolve(redis.disconnect()));
  expect(await waitForRedis(redis)).toBe(true);
  const upstream = await startRecordingUpstream();
  closing.push(() => upstream.close());
  const gateway = await startTestGateway(
    upstream.url,
    {
      rateLimits: {
        onStoreFailure: 'memory',
        policies: [
          { name: 'per-ip', key: 'ip', limit: 1000, window: '60s' },
          { name: 'per-path', key: 'principal', limit: 1000, window: '60s', match: { path: '/v1' } },
        ],
      },
    },
    { redis },
  );
  let closed = false;
  closing.push(async () => {
    if (!closed) await gateway.close();
  });

  await own.stop();
  const statuses = [];
  for (let i = 0; i < 60; i++) {
    const response = await request(`${gateway.origin}/v1/orders`, { dispatcher: gateway.agent });
    await response.body.dump();
    statuses.push(response.statusCode);
  }
  expect(new Set(statuses)).toEqual(new Set([200]));
  const failureLines = () =>
    gateway.logs.filter((line) => String(line['msg']).startsWith('rate-limit store'));
  // One line per policy at the first failure: the outage shows at once, not 120 times.
  expect(
    failureLines()
      .map((line) => line['policy'])
      .sort(),
  ).toEqual(['per-ip', 'per-path']);
  expect(failureLines().every((line) => line['level'] === 40 || line['level'] === 'warn')).toBe(true);

  // Closing writes what the interval counted since: every failure is in some line's count.
  await gateway.close();
  closed = true;
  const counted = (policy: string) =>
    failureLines()
      .filter((line) => line['policy'] === policy)
      .reduce((sum, line) => sum + Number(line['failures']), 0);
  expect(counted('per-ip')).toBe(60);
  expect(counted('per-path')).toBe(60);
  expect(failureLines()).toHaveLength(4);
});
