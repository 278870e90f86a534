/**
 * `npm start`: Portico with zero configuration, in one process.
 *
 * Without DATABASE_URL it serves an embedded PostgreSQL (PGlite) from the data dir; with it,
 * the real server. Everything it creates (database, keys) lives in PORTICO_DATA_DIR
 * (default .portico/) and is reused by the next start.
 */
import { pino } from 'pino';
import { loadAssertionKeys } from '../shared/assertion-keys.ts';
import { startService } from '../resource-service/app.ts';
import { connectDatabase } from '../resource-service/db/connect.ts';
import { startEmbeddedDatabase } from '../resource-service/db/embedded.ts';
import type { EmbeddedDatabase } from '../resource-service/db/embedded.ts';
import { migrate } from '../resource-service/db/migrate.ts';

const env = process.env;
const dataDir = env['PORTICO_DATA_DIR'] ?? '.portico';
const logger = pino({ name: 'portico', level: env['LOG_LEVEL'] ?? 'info' });

async function main(): Promise<void> {
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = env['DATABASE_URL'];
  if (databaseUrl === undefined || databaseUrl === '') {
    embedded = await startEmbeddedDatabase(dataDir);
    databaseUrl = embedded.url;
    logger.info({ dataDir }, 'DATABASE_URL not set: using the embedded PostgreSQL (PGlite) in the data dir');
  }
  const sql = connectDatabase({
    url: databaseUrl,
    ...(embedded === undefined ? {} : { max: embedded.maxConnections }),
  });
  await migrate(sql);

  const service = await startService({
    sql,
    logger,
    assertionKeys: loadAssertionKeys(env, dataDir),
    port: Number(env['SERVICE_PORT'] ?? 8081),
    host: env['SERVICE_HOST'] ?? '127.0.0.1',
  });
  logger.info({ url: service.url }, 'resource service listening');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await service.close();
    await sql.end({ timeout: 5 });
    await embedded?.stop();
    process.exit(0);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      stop(signal).catch((err: unknown) => {
        logger.error({ err }, 'unclean stop');
        process.exit(1);
      });
    });
  }
}

main().catch((err: unknown) => {
  logger.fatal({ err }, 'start failed');
  process.exit(1);
});
