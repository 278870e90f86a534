/**
 * SIGTERM of the service process under load: it stops accepting, answers what it has already
 * received (with Connection: close), closes idle keep-alive connections, and exits 0; past its
 * drain deadline it cuts what remains. Slow requests are made slow by a row lock that the test
 * holds from its own connection.
 */
import { Agent } from 'node:http';
import postgres from 'postgres';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase } from '../support/databases.ts';
import type { ScratchDatabase } from '../support/databases.ts';
import { SAMPLE_ORDER } from '../support/service.ts';
import { call, customer, now, runLoad, signedClient, sleep, waitFor } from './fault-client.ts';
import { spawnService } from './service-process.ts';
import type { ServiceChild } from './service-process.ts';

/** From the last in-flight answer to the process's exit. */
const EXIT_BOUND_MS = 2000;

let database: ScratchDatabase;
let sql: Sql;
const services: ServiceChild[] = [];
const agents: Agent[] = [];

beforeAll(async () => {
  database = await createScratchDatabase();
  sql = postgres(database.url, { max: 3, onnotice: () => {} });
});

afterAll(async () => {
  for (const agent of agents) agent.destroy();
  await Promise.all(services.map((s) => s.kill('SIGKILL')));
  await sql?.end({ timeout: 1 });
  await database?.drop();
});

async function start(env: Record<string, string> = {}): Promise<ServiceChild> {
  const service = await spawnService({ databaseUrl: database.url, env });
  services.push(service);
  return service;
}

/** Locks `ids` from the test's own connection until `release` is called. */
async function lockOrders(ids: string[]) {
  const locker = await sql.reserve();
  await locker`begin`;
  await locker`select id from orders where id = any(${ids}::uuid[]) for update`;
  return async () => {
    await locker`rollback`;
    locker.release();
  };
}

async function waitingOnLocks(count: number): Promise<boolean> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and application_name = 'portico-resource-service'
      and wait_event_type = 'Lock'`;
  return (row?.n ?? 0) >= count;
}

describe('SIGTERM of the service', () => {
  it('under load: answers every request already received, with Connection: close, refuses new connections, exits 0', async () => {
    const service = await start();
    const client = signedClient(service.url, service.key);
    const alice = customer('drain');
    const slowOrders: string[] = [];
    for (let i = 0; i < 3; i++)
      slowOrders.push((await client(alice, 'POST', '/v1/orders', { body: SAMPLE_ORDER })).body.id);

    const release = await lockOrders(slowOrders);
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 4 });
    agents.push(keepAlive);
    const slow = slowOrders.map((id) =>
      client(alice, 'PATCH', `/v1/orders/${id}`, { body: { status: 'cancelled' }, agent: keepAlive }),
    );
    await waitFor(
      () => waitingOnLocks(slowOrders.length),
      4000,
      'the slow requests to wait on the row locks',
    );

    const loadAgent = new Agent({ keepAlive: true, maxSockets: 6 });
    agents.push(loadAgent);
    const load = runLoad(6, (worker, iteration) =>
      (worker + iteration) % 2 === 0
        ? client(alice, 'POST', '/v1/orders', { body: SAMPLE_ORDER, agent: loadAgent })
        : client(alice, 'GET', '/v1/orders?limit=50', { agent: loadAgent }),
    );
    await sleep(300);
    const sigterm = now();
    service.child.kill('SIGTERM');
    await sleep(300);
    const fresh = await call(service.url, 'GET', '/healthz', { timeoutMs: 2000 });
    const loaded = await load.stop();
    expect(fresh.failure).toBe('ECONNREFUSED');
    // Still waiting on the locks: the drain waits for them.
    expect(service.child.exitCode).toBeNull();

    await release();
    const answers = await Promise.all(slow);
    const lastAnswer = now();
    const exit = await service.exited;
    const exitAfter = now() - lastAnswer;

    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.body.status).toBe('cancelled');
      expect(answer.headers?.['connection']).toBe('close');
    }
    expect(exit).toEqual({ code: 0, signal: null });
    expect(exitAfter).toBeLessThan(EXIT_BOUND_MS);

    // Sent before the signal: a complete answer, always. After it: an answer or a refusal,
    // never a truncated answer nor a 5xx.
    const before = loaded.filter((o) => o.sentAt !== undefined && o.sentAt < sigterm);
    expect(before.length).toBeGreaterThan(20);
    expect(before.filter((o) => o.status === undefined).map((o) => o.failure)).toEqual([]);
    for (const outcome of loaded) {
      if (outcome.status !== undefined) expect(outcome.status).toBeLessThan(300);
      else expect(['ECONNREFUSED', 'ECONNRESET', 'socket hang up', 'EPIPE']).toContain(outcome.failure);
    }
    console.info(
      `drain: ${loaded.length} requests under load, ${before.length} sent before SIGTERM; ` +
        `exit ${Math.round(exitAfter)} ms after the last in-flight answer`,
    );
  });

  it('past SERVICE_SHUTDOWN_TIMEOUT_MS cuts what is still running, rolls it back, and exits 0', async () => {
    const service = await start({ SERVICE_SHUTDOWN_TIMEOUT_MS: '800' });
    const client = signedClient(service.url, service.key);
    const bob = customer('deadline');
    const order = (await client(bob, 'POST', '/v1/orders', { body: SAMPLE_ORDER })).body.id as string;
    const release = await lockOrders([order]);
    try {
      const stuck = client(bob, 'PATCH', `/v1/orders/${order}`, { body: { status: 'cancelled' } });
      await waitFor(() => waitingOnLocks(1), 4000, 'the request to wait on the row lock');
      const sigterm = now();
      service.child.kill('SIGTERM');
      const exit = await service.exited;
      const took = now() - sigterm;
      const outcome = await stuck;
      expect(exit).toEqual({ code: 0, signal: null });
      expect(took).toBeGreaterThan(700);
      expect(took).toBeLessThan(800 + EXIT_BOUND_MS);
      // Cut: a failure the client can see, never a half answer taken for a whole one.
      expect(outcome.status).toBeUndefined();
      expect(service.output()).toMatch(/shutdown deadline/);
    } finally {
      await release();
    }
    const [row] = await sql<{ status: string }[]>`select status from orders where id = ${order}`;
    expect(row?.status).toBe('pending');
  });

  it.each(['abc', '-1', '2.5', '10s', '999999999'])(
    'refuses to start when SERVICE_SHUTDOWN_TIMEOUT_MS is %s, and says why',
    async (value) => {
      // An address nothing listens on: the refusal must come before any connection attempt.
      const service = await spawnService({
        databaseUrl: 'postgres://postgres@127.0.0.1:9/none',
        env: { SERVICE_SHUTDOWN_TIMEOUT_MS: value },
        waitReady: false,
      });
      services.push(service);
      const exit = await service.exited;
      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      expect(service.output()).toContain('SERVICE_SHUTDOWN_TIMEOUT_MS');
      expect(service.output()).not.toContain('ECONNREFUSED');
    },
  );
});
