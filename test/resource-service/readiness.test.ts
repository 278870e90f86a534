/**
 * The service's readiness runs a query (resource-service/readiness.ts): with SERVICE_PROBE_PORT
 * the service answers `/readyz` on a plain-HTTP probe listener, 200 while `select 1` passes and
 * 503 within the probe's bound once its database refuses it (a scratch database of its own,
 * closed to connections and its sessions terminated) or when PostgreSQL is at a closed port.
 * `/healthz` there stays 200: liveness, not the database.
 */
import { pino } from 'pino';
import postgres from 'postgres';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { connectDatabase } from '../../resource-service/db/connect.ts';
import { startProbeListener } from '../../resource-service/readiness.ts';
import { runService, type ServiceProcess } from '../../resource-service/run.ts';
import { createScratchDatabase } from '../support/databases.ts';
import { freePort } from '../support/free-port.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function probe(url: string, path = '/readyz') {
  const started = Date.now();
  const response = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(10_000) });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    ms: Date.now() - started,
  };
}

describe('the service readiness probe', () => {
  it('is ready while its database answers a query, and not ready once the database refuses it', async () => {
    const scratch = await createScratchDatabase();
    cleanups.push(() => scratch.drop());
    const running: ServiceProcess = await runService(
      { SERVICE_PORT: '0', SERVICE_PROBE_PORT: '0', SERVICE_PLAIN_HTTP: 'true' },
      pino({ level: 'silent' }),
      { url: scratch.url },
    );
    cleanups.push(() => running.stop());
    expect(running.probe).toBeDefined();
    const url = running.probe!.url;
    expect(await probe(url)).toMatchObject({
      status: 200,
      body: { status: 'ready', checks: [{ name: 'postgresql', ok: true }] },
    });

    // The database goes away under the service: no new session, the open ones terminated.
    const name = new URL(scratch.url).pathname.slice(1);
    const admin = postgres(inject('adminDatabaseUrl'), { max: 1, onnotice: () => {} });
    cleanups.push(() => admin.end());
    await admin.unsafe(`alter database "${name}" with allow_connections false`);
    await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${name}`;

    await expect.poll(async () => (await probe(url)).status, { timeout: 10_000, interval: 200 }).toBe(503);
    const down = await probe(url);
    expect(down.body).toMatchObject({ status: 'not ready', checks: [{ name: 'postgresql', ok: false }] });
    expect(down.ms).toBeLessThan(5000);
    // Liveness is not the database: restarting the service would not bring it back.
    expect(await probe(url, '/healthz')).toMatchObject({ status: 200, body: { status: 'ok' } });

    await admin.unsafe(`alter database "${name}" with allow_connections true`);
    await expect.poll(async () => (await probe(url)).status, { timeout: 15_000, interval: 200 }).toBe(200);
  });

  it('answers 503 within its bound when PostgreSQL is at a closed port', async () => {
    const closed = await freePort();
    const sql = connectDatabase({ url: `postgres://postgres@127.0.0.1:${closed}/portico` });
    cleanups.push(() => sql.end({ timeout: 0 }));
    const listener = await startProbeListener({ sql, port: 0, host: '127.0.0.1', timeoutMs: 1000 });
    cleanups.push(() => listener.close());
    const down = await probe(listener.url);
    expect(down).toMatchObject({
      status: 503,
      body: { status: 'not ready', checks: [{ name: 'postgresql', ok: false, detail: expect.any(String) }] },
    });
    expect(down.ms).toBeLessThan(3000);
  });
});
