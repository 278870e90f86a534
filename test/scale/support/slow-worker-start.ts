/**
 * Preloaded (`node --import`) into a gateway by the workers-shutdown test: the worker in slot
 * PORTICO_TEST_SLOW_SLOT blocks its main thread for PORTICO_TEST_SLOW_MS before the gateway's
 * modules load. It stands for that load itself, which is one synchronous stretch (about 5 s on
 * the loaded 2-core test machine, with no turn of the event loop): the same, only longer and
 * every time, so that the primary surely dies while this worker still starts.
 */
import cluster from 'node:cluster';

const slot = process.env['PORTICO_TEST_SLOW_SLOT'];
if (cluster.isWorker && slot !== undefined && process.env['PORTICO_WORKER_SLOT'] === slot)
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(process.env['PORTICO_TEST_SLOW_MS']));
