/**
 * Process entry of the gateway (`npm run gateway`): SIGTERM/SIGINT drain and exit 0; SIGHUP
 * reloads the certificate and the rate-limit policies (which also reload when the config
 * file changes). With GATEWAY_WORKERS above 1 this process is the primary of that many
 * gateway processes (workers.ts), each of which runs this same entry.
 */
// First: on a Node.js too old, one line and exit 1 before any other module runs.
import '../scripts/node-check.js';
import cluster from 'node:cluster';
import { installCrashGuard } from '../shared/crash-guard.ts';
import { armExitDeadline } from '../shared/exit-deadline.ts';
import { ConfigError } from './config/load.ts';
import { createLogger } from './observability/logger.ts';
import { runGateway } from './run.ts';
import { reportListening, runPrimary, workerCount } from './workers.ts';

const log = createLogger({ level: process.env['LOG_LEVEL'] ?? 'info' });
/** What a stop may take beyond the drain deadline before the process exits regardless. */
const STOP_MARGIN_MS = 2000;
// The drain is bounded by listener.shutdownTimeoutMs; this bound only catches a drain that hangs.
const crashGuard = installCrashGuard(log, { deadlineMs: 120_000 });

// Registered before anything starts: SIGHUP's default action ends the process, and one
// arriving while the gateway starts must not.
let onHangup = () => log.info('SIGHUP during start-up: nothing to reload yet');
process.on('SIGHUP', () => onHangup());

async function main(): Promise<void> {
  const workers = workerCount(process.env);
  if (workers > 1 && cluster.isPrimary) {
    const primary = runPrimary(workers, process.env, log);
    onHangup = () => primary.reload();
    return;
  }
  const running = await runGateway(process.env, log);
  onHangup = () => running.reload();
  crashGuard.drainWith(() => running.stop());
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    // The drain cuts what is left at shutdownTimeoutMs; what closes after it (Redis, the audit
    // log, the log itself) gets this margin, and then the process ends anyway.
    const deadlineMs = running.config.listener.shutdownTimeoutMs + STOP_MARGIN_MS;
    armExitDeadline(deadlineMs, () => log.error({ deadlineMs }, 'shutdown past its deadline: exiting'));
    running.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  // A worker whose primary is gone (killed) drains too: nobody would stop or replace it.
  if (cluster.isWorker) process.once('disconnect', () => stop('primary gone'));
  reportListening();
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    // For the operator at a terminal: the file and one problem per line; the log line is for machines.
    process.stderr.write(`${error.message}\n`);
    log.fatal({ file: error.source, problems: error.problems }, 'invalid gateway config');
  } else {
    log.fatal({ err: error }, 'gateway failed to start');
  }
  process.exitCode = 1;
  // A worker's channel to the primary would keep it alive: closing it lets the process end.
  if (cluster.isWorker) process.disconnect();
});
