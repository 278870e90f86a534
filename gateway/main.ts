/**
 * Process entry of the gateway (`npm run gateway`): SIGTERM/SIGINT drain and exit 0; SIGHUP
 * reloads the certificate and the rate-limit policies (which also reload when the config
 * file changes). With GATEWAY_WORKERS above 1 this process is the primary of that many
 * gateway processes (workers.ts), each of which runs this same entry.
 */
// First: on a Node.js too old, one line and exit 1 before any other module runs.
import '../shared/node-check.js';
import cluster from 'node:cluster';
import { installCrashGuard } from '../shared/crash-guard.ts';
import { armExitDeadline } from '../shared/exit-deadline.ts';
import { runCheck } from './check.ts';
import { loadConfig } from './config/load.ts';
import { logLevelOf, readGatewayEnvironment } from './environment.ts';
import { createLogger } from './observability/logger.ts';
import { runGateway } from './run.ts';
import { reportStartFailure } from './start-failure.ts';
import { workerCount } from './worker-count.ts';
import { reportListening, runPrimary } from './workers.ts';

// `--check [FILE]`: judge the config and the environment, start nothing (check.ts).
if (process.argv[2] === '--check') process.exit(runCheck(process.argv.slice(3), process.env));

const log = createLogger({ level: logLevelOf(process.env) });
/** What a stop may take beyond the drain deadline before the process exits regardless. */
const STOP_MARGIN_MS = 2000;
/**
 * The primary's, past its workers' own (their margin, and their SIGKILL a second later): it
 * kills only a worker that could not end itself.
 */
const PRIMARY_STOP_MARGIN_MS = STOP_MARGIN_MS + 2000;
// The drain is bounded by listener.shutdownTimeoutMs; this bound only catches a drain that hangs.
const crashGuard = installCrashGuard(log, { deadlineMs: 120_000 });

// Registered before anything starts: SIGHUP's default action ends the process, and one
// arriving while the gateway starts must not.
let onHangup = () => log.info('SIGHUP during start-up: nothing to reload yet');
process.on('SIGHUP', () => onHangup());

/** Set once the gateway runs: what a signal, or the primary's going, calls. */
let stop: ((signal: string) => void) | undefined;
/** A worker that failed to start disconnects itself: that is no primary gone. */
let failedStart = false;
// A worker whose primary is gone (killed) stops: nobody would stop or replace it. Registered
// before the start, and ahead of node:cluster's own handler, which would exit at once with
// status 0 and cut the drain (it leaves a worker be whose disconnect is marked as meant). A
// worker still starting exits now. While its start runs synchronously no handler can run at
// all: the orphan watch (worker-orphan-watch.ts) covers that stretch.
if (cluster.isWorker)
  process.prependOnceListener('disconnect', () => {
    if (failedStart) return;
    if (cluster.worker !== undefined) cluster.worker.exitedAfterDisconnect = true;
    if (stop !== undefined) return stop('primary gone');
    log.warn('the primary is gone before this worker listened: exiting');
    process.exit(1);
  });

async function main(): Promise<void> {
  // Every bad variable at once, before a worker or anything else starts.
  readGatewayEnvironment(process.env);
  const workers = workerCount(process.env);
  if (workers > 1 && cluster.isPrimary) {
    // Read here for the drain deadline only; each worker reads the config again (and logs its warnings).
    const drainMs = loadConfig(process.env).config.listener.shutdownTimeoutMs;
    const primary = runPrimary(workers, process.env, log, drainMs + PRIMARY_STOP_MARGIN_MS);
    onHangup = () => primary.reload();
    return;
  }
  const running = await runGateway(process.env, log);
  onHangup = () => running.reload();
  crashGuard.drainWith(() => running.stop());
  let stopping = false;
  stop = (signal: string) => {
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
  process.once('SIGTERM', () => stop?.('SIGTERM'));
  process.once('SIGINT', () => stop?.('SIGINT'));
  reportListening();
}

main().catch((error: unknown) => {
  // For the operator at a terminal one readable line (a bad file: one per problem); the log line for machines.
  reportStartFailure(error, log, 'gateway');
  process.exitCode = 1;
  // A worker's channel to the primary would keep it alive: closing it lets the process end.
  failedStart = true;
  if (cluster.isWorker) process.disconnect();
});
