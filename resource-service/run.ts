/**
 * The resource service as a process runs it, from the environment. Shared by
 * `npm run service` (main.ts) and `npm start`, which passes the embedded database's URL.
 */
import type { Logger } from 'pino';
import { loadAssertionKeys } from '../shared/assertion-keys.ts';
import { startService, type RunningService } from './app.ts';
import { connectDatabase } from './db/connect.ts';
import { migrate } from './db/migrate.ts';
import { purgeExpiredIdempotencyRecords } from './idempotency.ts';
import type { Sql } from 'postgres';

const PURGE_INTERVAL_MS = 10 * 60 * 1000;

export interface ServiceProcess {
  service: RunningService;
  sql: Sql;
  stop(): Promise<void>;
}

export async function runService(
  env: NodeJS.ProcessEnv,
  logger: Logger,
  database: { url: string; maxConnections?: number },
): Promise<ServiceProcess> {
  const pool =
    database.maxConnections ??
    (env['DATABASE_POOL_MAX'] === undefined ? undefined : Number(env['DATABASE_POOL_MAX']));
  const sql = connectDatabase({ url: database.url, ...(pool === undefined ? {} : { max: pool }) });
  const applied = await migrate(sql);
  if (applied.length > 0) logger.info({ applied }, 'database migrated');

  const service = await startService({
    sql,
    logger,
    assertionKeys: loadAssertionKeys(env, env['PORTICO_DATA_DIR'] || '.portico'),
    port: Number(env['SERVICE_PORT'] || 8081),
    host: env['SERVICE_HOST'] || '127.0.0.1',
  });
  logger.info({ url: service.url }, 'resource service listening');

  const purge = setInterval(() => {
    purgeExpiredIdempotencyRecords(sql).catch((err: unknown) =>
      logger.warn({ err }, 'idempotency purge failed'),
    );
  }, PURGE_INTERVAL_MS);
  purge.unref();

  return {
    service,
    sql,
    async stop() {
      clearInterval(purge);
      await service.close();
      await sql.end({ timeout: 5 });
    },
  };
}
