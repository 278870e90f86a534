/**
 * The last line of defence against a programming error that escapes every handler. Node's
 * default is to die on the spot, taking every in-flight request with it; instead the process
 * logs the error, stops accepting, lets what is in flight finish (the same drain as SIGTERM)
 * and exits with status 1, so a supervisor restarts it and no client sees a half answer.
 */
import type { Logger } from 'pino';

export interface CrashGuard {
  /** How to drain once the process is up; before that a crash exits at once. */
  drainWith(drain: () => Promise<void>): void;
}

/**
 * Installs the guard for this process. `deadlineMs` bounds the drain: past it the process
 * exits anyway, since a process in an unknown state must not linger.
 */
export function installCrashGuard(log: Logger, options: { deadlineMs: number }): CrashGuard {
  let drain: (() => Promise<void>) | undefined;
  let crashing = false;
  const onCrash = (origin: string) => (error: unknown) => {
    log.fatal({ err: error, origin }, 'programming error escaped: draining, then exiting with status 1');
    // A second error during the drain is logged, not acted on: the drain already runs.
    if (crashing) return;
    crashing = true;
    process.exitCode = 1;
    if (drain === undefined) process.exit(1);
    setTimeout(() => process.exit(1), options.deadlineMs).unref();
    drain().then(
      () => process.exit(1),
      (drainError: unknown) => {
        log.error({ err: drainError }, 'drain after a crash failed');
        process.exit(1);
      },
    );
  };
  process.on('uncaughtException', onCrash('uncaughtException'));
  process.on('unhandledRejection', onCrash('unhandledRejection'));
  return {
    drainWith(next) {
      drain = next;
    },
  };
}
