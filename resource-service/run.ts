/**
 * The resource service as a process runs it, from the environment. Shared by
 * `npm run service` (main.ts) and `npm start`, which passes the embedded database's URL.
 *
 * Each component registers its close on one lifecycle the moment it is created: a start that
 * fails half-way (a migration that fails, a port in use) closes exactly what it had opened, so
 * no pool connection outlives it, and stop() closes the same stack in reverse: listener
 * (drained), then the database pool.
 */
import type { Logger } from 'pino';
import type { Sql } from 'postgres';
import { loadAssertionKeys } from '../shared/assertion-keys.ts';
import { Lifecycle } from '../shared/lifecycle.ts';
import { readServiceConfig } from './config.ts';
import type { ServiceConfig } from './config.ts';
import { purgeExpiredIdempotencyRecords } from './data/idempotency.ts';
import { connectDatabase } from './db/connect.ts';
import { migrate } from './db/migrate.ts';
import { startService } from './server.ts';
import type { RunningService } from './server.ts';

const PURGE_INTERVAL_MS = 10 * 60 * 1000;

export interface ServiceProcess {
  service: RunningService;
  sql: Sql;
  /** Drains the service (SERVICE_SHUTDOWN_TIMEOUT_MS at most), then ends the database pool. */
  stop(): Promise<void>;
}

/** What a drain found, for the pool's close that runs after it. */
interface DrainOutcome {
  finished: boolean;
}

async function startComponents(
  lifecycle: Lifecycle,
  config: ServiceConfig,
  env: NodeJS.ProcessEnv,
  logger: Logger,
  database: { url: string },
  drain: DrainOutcome,
) {
  const sql = await lifecycle.open(
    'database pool',
    () =>
      connectDatabase({
        url: database.url,
        ...(config.poolMax === undefined ? {} : { max: config.poolMax }),
      }),
    // After a cut, the queries of the requests cut are not waited for: their connections
    // close, and PostgreSQL rolls back what they had begun.
    (pool) => pool.end({ timeout: drain.finished ? 5 : 0 }),
  );
  const applied = await migrate(sql);
  if (applied.length > 0) logger.info({ applied }, 'database migrated');

  const service = await lifecycle.open(
    'listener',
    () =>
      startService({
        sql,
        logger,
        assertionKeys: loadAssertionKeys(env, config.dataDir),
        port: config.port,
        host: config.host,
      }),
    async (running) => {
      drain.finished = await running.close({ deadlineMs: config.shutdownTimeoutMs });
    },
  );
  logger.info({ url: service.url }, 'resource service listening');

  const purge = setInterval(() => {
    purgeExpiredIdempotencyRecords(sql).catch((err: unknown) =>
      logger.warn({ err }, 'idempotency purge failed'),
    );
  }, PURGE_INTERVAL_MS);
  purge.unref();
  lifecycle.defer('idempotency purge', () => clearInterval(purge));
  return { sql, service };
}

export async function runService(
  env: NodeJS.ProcessEnv,
  logger: Logger,
  database: { url: string; maxConnections?: number },
): Promise<ServiceProcess> {
  const config = readServiceConfig(env, database.maxConnections);
  const lifecycle = new Lifecycle();
  const drain: DrainOutcome = { finished: true };
  const { sql, service } = await lifecycle.start((lc) =>
    startComponents(lc, config, env, logger, database, drain),
  );
  return {
    service,
    sql,
    async stop() {
      await lifecycle.close();
      logger.info({ finished: drain.finished }, 'resource service stopped');
    },
  };
}
