/**
 * `npm start`'s second step (start.ts is the first, start-portico.ts the third): checks the
 * environment, makes the data dir private and locks it, tells the embedded database's thread
 * (started by the first step, loading PGlite meanwhile) to open it, then loads the gateway and
 * the service and serves.
 */
import { join } from 'node:path';
import { EnvironmentError, environmentProblems, logLevelOf } from '../gateway/environment.ts';
import { createLogger } from '../gateway/observability/logger.ts';
import type { EmbeddedDatabaseThread } from '../resource-service/db/embedded-thread.ts';
import { readServiceConfig } from '../resource-service/config.ts';
import { createServiceLogger } from '../resource-service/logger.ts';
import { installCrashGuard } from '../shared/crash-guard.ts';
import { acquireDataDirLock } from '../shared/data-dir-lock.ts';
import { assertPrivateDirectory } from '../shared/data-dir-secrets.ts';
import { Lifecycle } from '../shared/lifecycle.ts';
import { createLogDestination } from '../shared/log-destination.ts';
import { startClock } from '../shared/start-clock.ts';
import { pruneValidatorCache, useValidatorCache } from '../shared/validator-cache.ts';
import type { StartContext } from './start-portico.ts';
import { dataDirOf } from '../shared/data-dir.ts';

const env: NodeJS.ProcessEnv = {
  ...process.env,
  PORTICO_DATA_DIR: dataDirOf(process.env),
};
const dataDir = dataDirOf(env);
// A bad LOG_LEVEL is refused below, by a logger that works.
const level = logLevelOf(env);
const gatewayLog = createLogger({ level });
// Never blocking or retrying forever on a stdout whose reader left (`npm start | tee log`).
const serviceLog = createServiceLogger(level, createLogDestination(1));
/** The banner's "ready in": from the command, npm's own start included when npm ran this. */
const clock = startClock(env);
/** When each step of the start ended, in ms from the command: where a slow start spent it. */
const reached: Record<string, number> = {};
function mark(step: string): void {
  reached[step] = Math.round(clock.elapsedMs());
}

/** Both servers run in this process: an escaped error drains both, then exits 1. */
const crashGuard = installCrashGuard(gatewayLog, { deadlineMs: 120_000 });

/**
 * What this process opened, closed in reverse: the gateway drains first, so nothing new
 * reaches the service while it drains, and the data dir's lock goes last, once the embedded
 * database has no writer. A start that fails half-way closes the same way.
 */
const lifecycle = new Lifecycle();

/** Every bad variable of the gateway and the service at once, before anything starts. */
function refuseBadEnvironment(): void {
  const problems = environmentProblems(env);
  try {
    readServiceConfig(env);
  } catch (error) {
    problems.push((error as Error).message);
  }
  if (problems.length > 0) throw new EnvironmentError(problems);
}

/**
 * What comes before anything is written: the environment checked, the data dir private and
 * locked; then the embedded database's thread (the first step's, absent when DATABASE_URL names
 * a server) told to open it.
 */
function prepare(database: EmbeddedDatabaseThread | undefined): EmbeddedDatabaseThread | undefined {
  refuseBadEnvironment();
  // Before anything is written there: a data dir others may write is no place for our keys.
  assertPrivateDirectory(dataDir);
  const lock = acquireDataDirLock(dataDir, { purpose: 'npm start' });
  lifecycle.defer('data dir lock', () => lock.release());
  // The gateway's and the service's validators as code, compiled once (shared/validator-cache.ts).
  useValidatorCache(join(dataDir, 'validators'));
  if (database === undefined) return undefined;
  // Closed before the lock is released: pgdata must have no writer once it is free. A start
  // refused before this point ends the thread with the process, pgdata never opened.
  lifecycle.defer('embedded PostgreSQL', () => database.stop());
  database.open(dataDir, (error) => {
    gatewayLog.fatal({ err: error }, 'the embedded database stopped: draining, then exiting with status 1');
    void lifecycle.close().finally(() => process.exit(1));
  });
  return database;
}

/** The rest of the start, once the first step started the embedded database's thread (or not). */
export function runStart(database: EmbeddedDatabaseThread | undefined): void {
  main(database).catch(async (error: unknown) => {
    // Refused, not failed: one readable line (what, and what to do), no stack trace.
    const { reportStartFailure } = await import('../gateway/start-failure.ts');
    reportStartFailure(error, gatewayLog, 'npm start');
    process.exit(1);
  });
}

async function main(thread: EmbeddedDatabaseThread | undefined): Promise<void> {
  const started = await lifecycle.start(async () => {
    const database = prepare(thread);
    const { startPortico } = await import('./start-portico.ts');
    mark('modules');
    const context: StartContext = { env, dataDir, lifecycle, database, gatewayLog, serviceLog, mark };
    return startPortico(context);
  });
  crashGuard.drainWith(() => lifecycle.close());
  await started.serve({ clock, reached });
  // Every validator this version needs is made by now: those of other versions can go.
  const pruned = pruneValidatorCache();
  if (pruned > 0)
    gatewayLog.info({ files: pruned }, "removed validators of other versions from the data dir's cache");
}
