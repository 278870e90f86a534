/**
 * Process entry of the resource service (`npm run service`).
 *
 * Environment: SERVICE_PORT (8081), SERVICE_HOST (127.0.0.1), DATABASE_URL (required here; the
 * zero-configuration start provides one), DATABASE_POOL_MAX (10), PORTICO_DATA_DIR (.portico),
 * PORTICO_ASSERTION_KEYS, SERVICE_SHUTDOWN_TIMEOUT_MS (10000), LOG_LEVEL (info),
 * SERVICE_TLS_CERT_FILE / SERVICE_TLS_KEY_FILE / SERVICE_TLS_CLIENT_CA_FILE (mutual TLS; the data
 * dir's development CA without them), SERVICE_PLAIN_HTTP (true: plain HTTP, warned).
 *
 * SIGHUP re-reads the certificate, key and client CA (rotation without a restart).
 *
 * SIGTERM/SIGINT drain: no new connections, requests in flight answered, then exit 0; whatever
 * still runs after SERVICE_SHUTDOWN_TIMEOUT_MS is cut.
 */
// First: on a Node.js too old, one line and exit 1 before any other module runs.
import '../shared/node-check.js';
import { installCrashGuard } from '../shared/crash-guard.ts';
import { armExitDeadline } from '../shared/exit-deadline.ts';
import { createLogDestination } from '../shared/log-destination.ts';
import { usableLogLevel } from '../shared/log-level.ts';
import { reportStartFailure } from '../shared/start-failure.ts';
import { ServiceConfigError } from './config.ts';
import { createServiceLogger } from './logger.ts';
import { runService } from './run.ts';

const env = process.env;
// Each line written as it comes, as pino's default does, but never blocking the process or
// retrying forever on a stdout whose reader left (shared/log-destination.ts).
const destination = createLogDestination(1);
process.once('exit', () => destination.flushSync());
// A LOG_LEVEL pino does not know is refused by readServiceConfig, through this logger.
const log = createServiceLogger(usableLogLevel(env), destination);
/**
 * What a stop may take beyond the drain deadline before the process exits regardless: the
 * database pool's end after a drain that finished waits up to 5 s for its queries (run.ts).
 */
const STOP_MARGIN_MS = 6000;
const crashGuard = installCrashGuard(log, { deadlineMs: 120_000 });

async function main(): Promise<void> {
  const url = env['DATABASE_URL'];
  if (url === undefined || url === '') {
    throw new ServiceConfigError(
      'DATABASE_URL is not set (npm start provides an embedded database; npm run service does not)',
    );
  }
  const running = await runService(env, log, { url });
  crashGuard.drainWith(() => running.stop());
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    const deadlineMs = running.shutdownTimeoutMs + STOP_MARGIN_MS;
    armExitDeadline(deadlineMs, () => log.error({ deadlineMs }, 'stop past its deadline: exiting'));
    running.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'unclean stop');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => running.reload());
}

main().catch((error: unknown) => {
  // For the operator at a terminal one readable line on stderr; the log line for machines.
  reportStartFailure(error, log, 'service');
  // A refused variable is a usage error (2); a start that could not work (a busy port) is 1.
  process.exit(error instanceof ServiceConfigError ? 2 : 1);
});
