/**
 * GATEWAY_WORKERS: one `node gateway/main.ts` as the primary of two gateway processes sharing
 * the listener (node:cluster). With Redis the limit is exact across workers; `/metrics` on
 * the admin listener is the sum of both; a killed worker is replaced; SIGTERM drains all and
 * leaves no process behind. Without Redis the start says that limits are per worker.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { onNewConnections, until, workerPids } from './support/gateway-workers.ts';
import {
  freshCustomer,
  LIMIT,
  policy,
  startScaleFixture,
  type ScaleFixture,
} from './support/scale-fixture.ts';

let fixture: ScaleFixture;
beforeAll(async () => {
  fixture = await startScaleFixture();
});
afterAll(async () => {
  await fixture?.close();
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function requestsCounted(adminPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  return [...text.matchAll(/^portico_http_requests_total\{[^}]*\} (\d+)$/gm)].reduce(
    (sum, match) => sum + Number(match[1]),
    0,
  );
}

describe('GATEWAY_WORKERS=2', () => {
  it('exact limits across workers with Redis, /metrics summed, a dead worker replaced, SIGTERM drains all', async () => {
    const gateway = await fixture.gateway(policy('deny'), {
      GATEWAY_WORKERS: '2',
      REDIS_URL: inject('redisUrl'),
      PORTICO_REDIS_PREFIX: `${inject('redisPrefix')}${randomUUID()}:`,
    });
    await gateway.waitForLog('gateway workers listening');
    const [first, second] = workerPids(gateway);
    expect(workerPids(gateway)).toHaveLength(2);

    const token = `Bearer ${await fixture.token(freshCustomer())}`;
    const statuses = await onNewConnections(gateway.port, token, LIMIT + 20);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    // Whichever worker answers the admin connection, it reports both workers' requests.
    for (let i = 0; i < 4; i++) expect(await requestsCounted(gateway.adminPort)).toBe(LIMIT + 20);

    process.kill(first!, 'SIGKILL');
    await until(() =>
      gateway.logs.some((line) => line['msg'] === 'gateway worker died; starting a replacement'),
    );
    await until(
      () => gateway.logs.filter((line) => line['msg'] === 'gateway workers listening').length === 2,
    );
    const replacement = workerPids(gateway).find((pid) => pid !== second)!;
    expect(workerPids(gateway)).toEqual(expect.arrayContaining([second, replacement]));
    expect(replacement).not.toBe(first);
    const after = await onNewConnections(gateway.port, `Bearer ${await fixture.token(freshCustomer())}`, 10);
    expect(after).toEqual(Array.from({ length: 10 }, () => 200));

    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
    for (const pid of [second!, replacement]) expect(alive(pid)).toBe(false);
    // Each live worker drained its gateway (the killed one could not).
    expect(gateway.logs.filter((line) => line['msg'] === 'gateway stopped')).toHaveLength(2);
  });

  it('without Redis says at start, as a warning, that limits are per worker', async () => {
    const gateway = await fixture.gateway(policy('deny'), { GATEWAY_WORKERS: '2' });
    await gateway.waitForLog('gateway workers listening');
    const warning = gateway.logs.find((line) =>
      String(line['msg']).startsWith('GATEWAY_WORKERS=2 without Redis'),
    );
    expect(String(warning?.['msg'])).toContain('per worker');
    expect(warning?.['level']).toBe(40);
  });

  it('a worker that cannot start stops the whole gateway (no restart loop)', async () => {
    await expect(
      fixture.gateway(policy('deny'), { GATEWAY_WORKERS: '2', GATEWAY_PORT: 'not-a-port' }),
    ).rejects.toThrow(/exited before "gateway listening"/);
  });
});
