/**
 * The bound on a process's stop: past its drain deadline and a margin, it exits whatever still
 * runs (issue 31: a process that never ends after SIGTERM keeps its ports and blocks a restart).
 *
 * Two bounds. A timer exits with status 1 when the stop hangs on something asynchronous (a
 * connection that never closes, a store that never answers). A timer cannot fire while the
 * process is stuck in a synchronous call (a write to a descriptor that blocks), so a thread of
 * its own, which needs nothing of the main thread, sends SIGKILL a moment later.
 */
import { Worker } from 'node:worker_threads';

const WATCHDOG = `
const { workerData } = require('node:worker_threads');
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.ms);
process.kill(workerData.pid, 'SIGKILL');
`;

/** Arms both bounds: exit(1) after `deadlineMs`, SIGKILL `killAfterMs` later. */
export function armExitDeadline(deadlineMs: number, onExpired: () => void, killAfterMs = 1000): void {
  const timer = setTimeout(() => {
    onExpired();
    process.exit(1);
  }, deadlineMs);
  timer.unref();
  const watchdog = new Worker(WATCHDOG, {
    eval: true,
    workerData: { pid: process.pid, ms: deadlineMs + killAfterMs },
    stdout: true,
    stderr: true,
  });
  watchdog.unref();
}
