/**
 * Start-up of the service process (run.ts): a start that fails half-way closes what it had
 * opened, counted from both ends (the service's sessions in pg_stat_activity, and this
 * process's sockets), and a bad variable is refused before anything is opened.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import postgres from 'postgres';
import type { Sql } from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ServiceConfigError } from '../../resource-service/config.ts';
import { runService } from '../../resource-service/run.ts';
import { createScratchDatabase } from '../support/databases.ts';
import type { ScratchDatabase } from '../support/databases.ts';

const silent = pino({ level: 'silent' });
const KEYS = `start:${randomBytes(32).toString('base64')}`;

let database: ScratchDatabase;
/** The test's own view of the database, under another application name than the service's. */
let observer: Sql;
const blockers: Server[] = [];

beforeAll(async () => {
  database = await createScratchDatabase();
  observer = postgres(database.url, {
    max: 1,
    onnotice: () => {},
    connection: { application_name: 'startup-test' },
  });
});

afterEach(async () => {
  await Promise.all(blockers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

afterAll(async () => {
  await observer?.end({ timeout: 1 });
  await database?.drop();
});

async function serviceSessions(): Promise<number> {
  const [row] = await observer<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and application_name = 'portico-resource-service'`;
  return row?.n ?? 0;
}

/**
 * This process's sockets, client and server: what a leaked pool connection or listener holds.
 * Timers are left out: the test runner's and the observer's come and go on their own.
 */
function openHandles(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of process.getActiveResourcesInfo()) {
    if (name === 'TCPSocketWrap' || name === 'TCPServerWrap') counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}

/**
 * What `measure` gives once it equals `expected`, or after `ms`: a server session or a socket
 * takes a moment to go once its client has closed it, so equality is awaited, never assumed.
 */
async function settled<T>(measure: () => T | Promise<T>, expected: T, ms = 3000): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await measure();
  while (JSON.stringify(value) !== JSON.stringify(expected) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await measure();
  }
  return value;
}

/** A port something else already listens on. */
async function portInUse(): Promise<number> {
  const server = createServer();
  blockers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

describe('service start-up', () => {
  // Its development PKI goes here, not into a .portico/ of the working directory.
  const dataDir = mkdtempSync(join(tmpdir(), 'portico-startup-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a failed start (port in use) leaves no database session and no open handle behind', async () => {
    const port = await portInUse();
    const sessionsBefore = await serviceSessions();
    const handlesBefore = openHandles();

    const env = { SERVICE_PORT: String(port), PORTICO_ASSERTION_KEYS: KEYS, PORTICO_DATA_DIR: dataDir };
    await expect(runService(env, silent, { url: database.url })).rejects.toMatchObject({
      code: 'EADDRINUSE',
    });

    // The start got as far as migrating: the pool had connections open when it failed.
    const [migrated] = await observer<{ n: number }[]>`select count(*)::int as n from schema_migrations`;
    expect(migrated?.n).toBeGreaterThan(0);
    expect(await settled(serviceSessions, sessionsBefore)).toBe(sessionsBefore);
    expect(await settled(openHandles, handlesBefore)).toEqual(handlesBefore);
  });

  it('a failed migration closes the pool it was running on', async () => {
    const scratch = await createScratchDatabase();
    const sql = postgres(scratch.url, { max: 1, onnotice: () => {} });
    try {
      // A table in the way of the first migration.
      await sql`create table customers (id int)`;
      const sessions = async () => {
        const [row] = await sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and application_name = 'portico-resource-service'`;
        return row?.n ?? 0;
      };
      const handlesBefore = openHandles();
      const env = { SERVICE_PORT: '0', PORTICO_ASSERTION_KEYS: KEYS, PORTICO_DATA_DIR: dataDir };
      await expect(runService(env, silent, { url: scratch.url })).rejects.toMatchObject({ code: '42P07' });
      expect(await settled(sessions, 0)).toBe(0);
      expect(await settled(openHandles, handlesBefore)).toEqual(handlesBefore);
    } finally {
      await sql.end({ timeout: 1 });
      await scratch.drop();
    }
  });

  it('stop() closes every session the service opened', async () => {
    // About database sessions, not transport: plain HTTP, asked for explicitly.
    const env = { SERVICE_PORT: '0', PORTICO_ASSERTION_KEYS: KEYS, SERVICE_PLAIN_HTTP: 'true' };
    const running = await runService(env, silent, { url: database.url });
    expect((await fetch(`${running.service.url}/healthz`)).status).toBe(200);
    expect(await serviceSessions()).toBeGreaterThan(0);
    await running.stop();
    expect(await settled(serviceSessions, 0)).toBe(0);
  });

  it.each([
    ['SERVICE_PORT', 'abc'],
    ['SERVICE_PORT', '-1'],
    ['SERVICE_PORT', '65536'],
    ['SERVICE_PORT', '80.5'],
    ['SERVICE_HOST', 'not a host'],
    ['SERVICE_HOST', 'http://127.0.0.1'],
    ['SERVICE_HOST', '[::1]'],
  ])('refuses %s=%s before opening anything, and names the variable', async (name, value) => {
    // An address nothing listens on: the refusal must come before any connection attempt.
    const started = runService({ [name]: value, PORTICO_ASSERTION_KEYS: KEYS }, silent, {
      url: 'postgres://postgres@127.0.0.1:9/none',
    });
    await expect(started).rejects.toBeInstanceOf(ServiceConfigError);
    await expect(started).rejects.toThrow(name);
  });

  it('reports every bad variable at once', async () => {
    const started = runService(
      { SERVICE_PORT: 'x', SERVICE_HOST: 'a b', SERVICE_SHUTDOWN_TIMEOUT_MS: 'soon' },
      silent,
      { url: 'postgres://postgres@127.0.0.1:9/none' },
    );
    await expect(started).rejects.toThrow(/SERVICE_SHUTDOWN_TIMEOUT_MS.*SERVICE_PORT.*SERVICE_HOST/);
  });
});
