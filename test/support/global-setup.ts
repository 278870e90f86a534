/**
 * Finds PostgreSQL and Redis for the test run, in this order:
 *   1. DATABASE_URL / REDIS_URL when set;
 *   2. containers started by testcontainers when a Docker engine answers within 5 s;
 *   3. the local servers on 127.0.0.1:5432 (user postgres, trust) and 127.0.0.1:6379.
 * Then gives this run a database of its own and a Redis key prefix of its own, and removes
 * both at the end, so runs never see each other's data and nothing outlives the run.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Socket } from 'node:net';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../resource-service/db/migrate.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    /** Server-level URL (database `postgres`) for tests that create databases of their own. */
    adminDatabaseUrl: string;
    redisUrl: string;
    redisPrefix: string;
    /** Unique per run; databases a test creates are named `portico_t_<runId>_...`. */
    runId: string;
  }
}

const LOCAL_POSTGRES = 'postgres://postgres@127.0.0.1:5432/postgres';
const LOCAL_REDIS = 'redis://127.0.0.1:6379';
const DOCKER_TIMEOUT_MS = 5000;

interface Servers {
  postgresUrl: string;
  redisUrl: string;
  stop: () => Promise<void>;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function portAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(port, host, () => done(true));
  });
}

/** Containers, only when a Docker engine is plausibly there and answers in time. */
async function startContainers(): Promise<Servers | undefined> {
  const dockerHost = process.env['DOCKER_HOST'];
  if (dockerHost === undefined && !existsSync('/var/run/docker.sock')) return undefined;
  try {
    // Lazy: loading testcontainers costs time that runs without Docker should not pay.
    const { GenericContainer, getContainerRuntimeClient } = await import('testcontainers');
    await withTimeout(getContainerRuntimeClient(), DOCKER_TIMEOUT_MS, 'the Docker engine');
    const [pg, redis] = await Promise.all([
      new GenericContainer('postgres:15-alpine')
        .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
        .withExposedPorts(5432)
        .withCommand(['postgres', '-c', 'max_connections=300'])
        .start(),
      new GenericContainer('redis:7-alpine').withExposedPorts(6379).start(),
    ]);
    return {
      postgresUrl: `postgres://postgres@${pg.getHost()}:${pg.getMappedPort(5432)}/postgres`,
      redisUrl: `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`,
      stop: async () => {
        await Promise.all([pg.stop(), redis.stop()]);
      },
    };
  } catch (error) {
    console.warn(`global-setup: no containers (${(error as Error).message}); trying local servers`);
    return undefined;
  }
}

async function findServers(): Promise<Servers> {
  const envDatabase = process.env['DATABASE_URL'];
  const envRedis = process.env['REDIS_URL'];
  const containers =
    envDatabase !== undefined && envRedis !== undefined ? undefined : await startContainers();
  const postgresUrl = envDatabase ?? containers?.postgresUrl ?? LOCAL_POSTGRES;
  const redisUrl = envRedis ?? containers?.redisUrl ?? LOCAL_REDIS;
  const missing: string[] = [];
  const pgTarget = new URL(postgresUrl);
  const redisTarget = new URL(redisUrl);
  if (!(await portAnswers(pgTarget.hostname, Number(pgTarget.port || 5432))))
    missing.push(`PostgreSQL at ${pgTarget.host}`);
  if (!(await portAnswers(redisTarget.hostname, Number(redisTarget.port || 6379))))
    missing.push(`Redis at ${redisTarget.host}`);
  if (missing.length > 0) {
    await containers?.stop();
    throw new Error(
      `Tests need PostgreSQL and Redis: nothing answers for ${missing.join(' and ')}. ` +
        'Start them locally (PostgreSQL 15 on 127.0.0.1:5432 with trust auth, Redis 7 on 127.0.0.1:6379), ' +
        'start a Docker engine, or set DATABASE_URL and REDIS_URL.',
    );
  }
  return { postgresUrl, redisUrl, stop: containers?.stop ?? (async () => {}) };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const servers = await findServers();
  const runId = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const databaseName = `portico_test_${runId}`;

  const admin = postgres(servers.postgresUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${databaseName}"`);
  const databaseUrl = new URL(servers.postgresUrl);
  databaseUrl.pathname = `/${databaseName}`;

  const sql = postgres(databaseUrl.href, { max: 1, onnotice: () => {} });
  try {
    await migrate(sql);
  } catch (error) {
    await sql.end();
    await admin.unsafe(`drop database if exists "${databaseName}" with (force)`);
    await admin.end();
    await servers.stop();
    throw error;
  }
  await sql.end();

  // Every temporary file of the run (certificates, data dirs, config files), in test workers
  // and the processes they start, goes under one directory that the teardown removes.
  const runTmp = mkdtempSync(join(tmpdir(), `portico-test-${runId}-`));
  process.env['TMPDIR'] = runTmp;

  const redisPrefix = `portico-test:${runId}:`;
  project.provide('databaseUrl', databaseUrl.href);
  project.provide('adminDatabaseUrl', servers.postgresUrl);
  project.provide('redisUrl', servers.redisUrl);
  project.provide('redisPrefix', redisPrefix);
  project.provide('runId', runId);

  return async () => {
    await admin.unsafe(`drop database if exists "${databaseName}" with (force)`);
    // Databases that tests made for themselves carry the run id too.
    const leftovers = await admin<{ datname: string }[]>`
      select datname from pg_database where datname like ${`portico_t_${runId}%`}`;
    for (const { datname } of leftovers)
      await admin.unsafe(`drop database if exists "${datname}" with (force)`);
    await admin.end();

    const redis = new Redis(servers.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 500);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    redis.disconnect();
    await servers.stop();
    rmSync(runTmp, { recursive: true, force: true });
  };
}
