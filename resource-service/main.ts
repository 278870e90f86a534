/**
 * Process entry of the resource service (`npm run service`).
 *
 * Environment: SERVICE_PORT (8081), SERVICE_HOST (127.0.0.1), DATABASE_URL (required here; the
 * zero-configuration start provides one), DATABASE_POOL_MAX (10), PORTICO_DATA_DIR (.portico),
 * PORTICO_ASSERTION_KEYS, LOG_LEVEL (info).
 */
import { pino } from 'pino';
import { runService } from './run.ts';

async function main(): Promise<void> {
  const env = process.env;
  const logger = pino({ name: 'resource-service', level: env['LOG_LEVEL'] ?? 'info' });
  const url = env['DATABASE_URL'];
  if (url === undefined || url === '') {
    logger.fatal(
      'DATABASE_URL is not set (npm start provides an embedded database; npm run service does not)',
    );
    process.exit(2);
  }
  const running = await runService(env, logger, { url });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    running.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'unclean stop');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
