/**
 * Preloaded into every gateway worker (`node --import`, set by the primary in workers.ts): a
 * thread that sends this process SIGTERM once its primary is gone. A primary SIGKILLed while a
 * worker still started left that worker running with ppid 1 (issue 31).
 *
 * A thread, because the main thread cannot notice in time: loading the gateway's modules is one
 * synchronous stretch (about 5 s on the loaded 2-core test machine, the event loop never
 * turning), so no 'disconnect' handler runs; node:cluster's own exit on 'disconnect' came only
 * when the start reached its first listen, which failed with EPIPE. The thread polls its
 * parent's pid and needs nothing of the main thread. SIGTERM rather than SIGKILL: a worker that
 * serves drains as on any SIGTERM, bounded by its exit deadline (main.ts); one still starting
 * has no handler for it yet, and SIGTERM's default action ends it at once.
 */
import cluster from 'node:cluster';
import { Worker } from 'node:worker_threads';
import { PRIMARY_PID_VARIABLE } from '../shared/worker-slot.ts';

/** How often the thread looks: the most a worker outlives its primary before SIGTERM. */
const POLL_MS = 100;

const WATCH = `
const { workerData } = require('node:worker_threads');
const sleep = new Int32Array(new SharedArrayBuffer(4));
while (process.ppid === workerData.primaryPid) Atomics.wait(sleep, 0, 0, workerData.pollMs);
process.kill(workerData.pid, 'SIGTERM');
`;

const primaryPid = Number(process.env[PRIMARY_PID_VARIABLE]);
if (cluster.isWorker && Number.isInteger(primaryPid) && primaryPid > 0) {
  const watch = new Worker(WATCH, {
    eval: true,
    workerData: { pid: process.pid, primaryPid, pollMs: POLL_MS },
    stdout: true,
    stderr: true,
  });
  watch.unref();
}
