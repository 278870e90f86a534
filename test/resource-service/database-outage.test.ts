/**
 * PostgreSQL goes away under load and comes back: the service answers 503 problems with
 * Retry-After meanwhile (never a 500, never a hang), recovers without a restart, and loses
 * nothing it acknowledged. Runs against a private PostgreSQL instance that the test stops.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { pino } from 'pino';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService } from '../../resource-service/server.ts';
import type { RunningService } from '../../resource-service/server.ts';
import { connectDatabase } from '../../resource-service/db/connect.ts';
import { migrate } from '../../resource-service/db/migrate.ts';
import type { AssertionKey } from '../../shared/identity-assertion.ts';
import { startPostgresInstance } from '../support/postgres-instance.ts';
import type { PostgresInstance, StopMode } from '../support/postgres-instance.ts';
import { SAMPLE_ORDER } from '../support/service.ts';
import { call, customer, now, runLoad, signedClient, sleep, waitFor } from './fault-client.ts';
import type { Outcome } from './fault-client.ts';

/** Longest a request may take while the database is down: the promise made to callers. */
const ANSWER_BOUND_MS = 3000;
/** From `pg_ctl start` returning to requests succeeding again. */
const RECOVERY_BOUND_MS = 3000;
/** How long the database stays down. */
const OUTAGE_MS = 2500;
/** How long traffic keeps running once the recovery bound has passed: every request in it must succeed. */
const SETTLED_MS = 1500;

const key: AssertionKey = { kid: 'outage', secret: randomBytes(32) };
let pg: PostgresInstance;
let sql: Sql;
let service: RunningService;

beforeAll(async () => {
  pg = await startPostgresInstance();
  sql = connectDatabase({ url: pg.url(), max: 10 });
  await migrate(sql);
  service = await startService({ sql, assertionKeys: [key], logger: pino({ level: 'silent' }), port: 0 });
});

afterAll(async () => {
  await service?.close();
  await sql?.end({ timeout: 1 });
  await pg?.destroy();
});

type Sample = Outcome & { kind: 'read' | 'create' };
const succeeded = (s: Sample) => s.status === 200 || s.status === 201;

async function outageUnderLoad(mode: StopMode) {
  const client = signedClient(service.url, key);
  const alice = customer('outage');
  const load = runLoad(8, async (_worker, iteration): Promise<Sample> => {
    if (iteration % 2 === 0) {
      const headers = { 'idempotency-key': randomUUID() };
      const outcome = await client(alice, 'POST', '/v1/orders', {
        body: SAMPLE_ORDER,
        headers,
        timeoutMs: 10_000,
      });
      return { kind: 'create', ...outcome };
    }
    return { kind: 'read', ...(await client(alice, 'GET', '/v1/orders?limit=5', { timeoutMs: 10_000 })) };
  });
  await waitFor(() => load.results.filter(succeeded).length >= 40, 10_000, 'traffic before the outage');

  await pg.stop(mode);
  const down = now();
  await sleep(OUTAGE_MS / 2);
  const health = await call(service.url, 'GET', '/healthz', { timeoutMs: 10_000 });
  await sleep(OUTAGE_MS / 2);
  const restarting = now();
  await pg.start();
  const up = now();
  await waitFor(
    () => load.results.some((s) => succeeded(s) && s.startedAt > up),
    RECOVERY_BOUND_MS + 5000,
    'a success after the restart',
  );
  // Wait out the recovery bound, then a settled window measured from the restart (not from
  // the first success, which can come within milliseconds and would leave the window empty).
  await sleep(up + RECOVERY_BOUND_MS + SETTLED_MS - now());
  const samples = await load.stop();
  const healthAfter = await call(service.url, 'GET', '/healthz', { timeoutMs: 10_000 });
  return { samples, down, restarting, up, health, healthAfter };
}

describe.each(['fast', 'immediate'] as const)('PostgreSQL stopped with -m %s under load', (mode) => {
  it('answers 503 problems meanwhile, recovers without a restart, and loses no acknowledged order', async () => {
    const { samples, down, restarting, up, health, healthAfter } = await outageUnderLoad(mode);

    // Every call got a complete answer, in time: no hang, no reset, no crash.
    expect(samples.filter((s) => s.failure !== undefined).map((s) => s.failure)).toEqual([]);
    const slowest = Math.max(...samples.map((s) => s.ms));
    expect(slowest).toBeLessThan(ANSWER_BOUND_MS);
    // Never a 500: what is not a success is a retryable 503 problem.
    const failed = samples.filter((s) => !succeeded(s));
    expect(new Set(failed.map((s) => s.status))).toEqual(new Set([503]));
    for (const s of failed) {
      expect(s.headers?.['content-type']).toBe('application/problem+json');
      expect(s.body.code).toBe('ERR_SERVICE_UNAVAILABLE');
      expect(s.headers?.['retry-after']).toMatch(/^\d+$/);
      expect(s.headers?.['cache-control']).toBe('no-store');
    }
    const duringOutage = samples.filter((s) => s.startedAt > down && s.startedAt + s.ms < restarting);
    expect(duringOutage.length).toBeGreaterThan(10);
    expect(duringOutage.filter(succeeded)).toEqual([]);

    expect(health.status).toBe(503);
    expect(health.body.code).toBe('ERR_SERVICE_UNAVAILABLE');
    expect(health.headers?.['retry-after']).toMatch(/^\d+$/);
    expect(healthAfter.status).toBe(200);

    // The same process answers again, within the bound, and keeps answering.
    const firstSuccess = Math.min(
      ...samples.filter((s) => succeeded(s) && s.startedAt > up).map((s) => s.startedAt + s.ms),
    );
    const settled = samples.filter((s) => s.startedAt > up + RECOVERY_BOUND_MS);
    expect(firstSuccess - up).toBeLessThan(RECOVERY_BOUND_MS);
    expect(settled.length).toBeGreaterThan(10);
    expect(settled.filter((s) => !succeeded(s)).map((s) => s.status)).toEqual([]);

    // Nothing acknowledged is lost.
    const acknowledged = samples
      .filter((s) => s.kind === 'create' && s.status === 201)
      .map((s) => s.body.id as string);
    const stored = await sql<{ id: string }[]>`select id from orders where id = any(${acknowledged}::uuid[])`;
    expect(stored.map((r) => r.id).sort()).toEqual([...acknowledged].sort());

    console.info(
      `outage -m ${mode}: ${samples.length} requests, ${failed.length} answered 503, slowest ${Math.round(slowest)} ms; ` +
        `first success ${Math.round(firstSuccess - up)} ms after pg_ctl start returned`,
    );
  });
});
