/**
 * `npm start`: Portico with zero configuration, in one process: the resource service (on an
 * embedded PostgreSQL unless DATABASE_URL is set), demo data, and the gateway in front of it
 * over HTTPS with a self-signed certificate and the development token issuer. The hop between
 * them is mutual TLS too: a development CA in the data dir issues the service's certificate
 * and the gateway's client certificate (SERVICE_TLS_* and GATEWAY_UPSTREAM_* name other files;
 * SERVICE_PLAIN_HTTP=true, warned about, drops it). Everything it creates lives in
 * PORTICO_DATA_DIR (default .portico/) and is reused by the next start.
 * One process at a time: the data dir's lock is taken before anything in it is touched.
 *
 * This file is the start's first step and loads little on purpose: it checks the environment,
 * takes the data dir's lock and starts the embedded database in a thread of its own, and only
 * then loads the gateway and the service (start-portico.ts), so that opening the database and
 * loading their modules, each about a third of a warm start, run side by side on two cores.
 *
 * The start script runs node with `--liftoff-only`: PGlite's WebAssembly (a 9 MB module) stays
 * on V8's baseline code. Its optimising compiler took a fifth of a warm start's CPU and made the
 * process peak near 800 MiB while it compiled, for statements at most a fifth faster; the
 * embedded database is for trying Portico, a server is for load (docs/performance.md).
 */
import { join } from 'node:path';
import { EnvironmentError, environmentProblems, logLevelOf } from '../gateway/environment.ts';
import { createLogger } from '../gateway/observability/logger.ts';
import {
  startEmbeddedDatabaseThread,
  type EmbeddedDatabaseThread,
} from '../resource-service/db/embedded-thread.ts';
import { readServiceConfig } from '../resource-service/config.ts';
import { createServiceLogger } from '../resource-service/logger.ts';
import { installCrashGuard } from '../shared/crash-guard.ts';
import { acquireDataDirLock } from '../shared/data-dir-lock.ts';
import { assertPrivateDirectory } from '../shared/data-dir-secrets.ts';
import { Lifecycle } from '../shared/lifecycle.ts';
import { createLogDestination } from '../shared/log-destination.ts';
import { startClock } from '../shared/start-clock.ts';
import { pruneValidatorCache, useValidatorCache } from '../shared/validator-cache.ts';
import { answerHelp, usageError } from './cli-args.ts';
import type { StartContext } from './start-portico.ts';

const USAGE = 'usage: npm start';
answerHelp(`${USAGE}

Starts Portico with zero configuration, in one process: the resource service (on an embedded
PostgreSQL unless DATABASE_URL is set) with demo data, and the gateway in front of it over HTTPS,
mutual TLS between them. Prints the URLs, the trusted issuer, a demo token (when the development
issuer is trusted) and a curl line. Ctrl-C (SIGINT) or SIGTERM drains and stops it.

Environment: PORTICO_DATA_DIR (default .portico: keys, certificates, embedded database, audit
log), PORTICO_CONFIG (gateway config file), GATEWAY_PORT (8443), ADMIN_PORT (8442), ADMIN_HOST
(127.0.0.1), SERVICE_PORT (8081), DATABASE_URL, REDIS_URL, LOG_LEVEL (info); docs/configuration.md.`);
if (process.argv.length > 2) usageError('start', USAGE, `unexpected argument ${process.argv[2]}`);

const env: NodeJS.ProcessEnv = {
  ...process.env,
  PORTICO_DATA_DIR: process.env['PORTICO_DATA_DIR'] || '.portico',
};
const dataDir = env['PORTICO_DATA_DIR'] ?? '.portico';
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
 * locked; then the embedded database's thread started (unless DATABASE_URL names a server).
 */
function prepare(): EmbeddedDatabaseThread | undefined {
  refuseBadEnvironment();
  // Before anything is written there: a data dir others may write is no place for our keys.
  assertPrivateDirectory(dataDir);
  const lock = acquireDataDirLock(dataDir, { purpose: 'npm start' });
  lifecycle.defer('data dir lock', () => lock.release());
  // The gateway's and the service's validators as code, compiled once (shared/validator-cache.ts).
  useValidatorCache(join(dataDir, 'validators'));
  if (env['DATABASE_URL'] !== undefined && env['DATABASE_URL'] !== '') return undefined;
  const database = startEmbeddedDatabaseThread(dataDir, (error) => {
    gatewayLog.fatal({ err: error }, 'the embedded database stopped: draining, then exiting with status 1');
    void lifecycle.close().finally(() => process.exit(1));
  });
  lifecycle.defer('embedded PostgreSQL', () => database.stop());
  return database;
}

async function main(): Promise<void> {
  const started = await lifecycle.start(async () => {
    const database = prepare();
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

main().catch(async (error: unknown) => {
  // Refused, not failed: one readable line (what, and what to do), no stack trace.
  const { reportStartFailure } = await import('../gateway/start-failure.ts');
  reportStartFailure(error, gatewayLog, 'npm start');
  process.exit(1);
});
