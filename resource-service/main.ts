/**
 * The resource service as a process: `npm run service` (built) or `node resource-service/main.ts`.
 *
 * Environment: SERVICE_PORT (8081), SERVICE_HOST (127.0.0.1), DATABASE_URL (required here; the
 * zero-configuration start provides one), PORTICO_DATA_DIR (.portico), PORTICO_ASSERTION_KEYS,
 * LOG_LEVEL (info).
 */
import { pino } from 'pino';
import { loadAssertionKeys } from '../shared/assertion-keys.ts';
import { startService } from './app.ts';
import { connectDatabase } from './db/connect.ts';
import { migrate } from './db/migrate.ts';
import { purgeExpiredIdempotencyRecords } from './idempotency.ts';

const PURGE_INTERVAL_MS = 10 * 60 * 1000;

async function main(): Promise<void> {
  const env = process.env;
  const logger = pino({ name: 'resource-service', level: env['LOG_LEVEL'] ?? 'info' });
  const databaseUrl = env['DATABASE_URL'];
  if (databaseUrl === undefined || databaseUrl === '') {
    logger.fatal(
      'DATABASE_URL is not set (npm start provides an embedded database; npm run service does not)',
    );
    process.exit(2);
  }
  const sql = connectDatabase({
    url: databaseUrl,
    ...(env['DATABASE_POOL_MAX'] === undefined ? {} : { max: Number(env['DATABASE_POOL_MAX']) }),
  });
  const applied = await migrate(sql);
  if (applied.length > 0) logger.info({ applied }, 'database migrated');

  const service = await startService({
    sql,
    logger,
    assertionKeys: loadAssertionKeys(env, env['PORTICO_DATA_DIR'] ?? '.portico'),
    port: Number(env['SERVICE_PORT'] ?? 8081),
    host: env['SERVICE_HOST'] ?? '127.0.0.1',
  });
  logger.info({ url: service.url }, 'resource service listening');

  const purge = setInterval(() => {
    purgeExpiredIdempotencyRecords(sql).catch((err: unknown) =>
      logger.warn({ err }, 'idempotency purge failed'),
    );
  }, PURGE_INTERVAL_MS);
  purge.unref();

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    clearInterval(purge);
    service
      .close()
      .then(() => sql.end({ timeout: 5 }))
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        logger.error({ err }, 'unclean stop');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
