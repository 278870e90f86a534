/**
 * A gateway worker's slot under GATEWAY_WORKERS: 1 to N, set by the primary when it forks a
 * worker and handed on to the worker that replaces it. Unlike node:cluster's worker id, which
 * grows with every replacement, a slot names the same place across replacements and restarts:
 * the audit log keeps one chain per slot (gateway/audit/).
 */
import cluster from 'node:cluster';

/** The environment variable that carries the slot from the primary to its worker. */
export const WORKER_SLOT_VARIABLE = 'PORTICO_WORKER_SLOT';

/** This process's slot when it is a gateway worker, else undefined (a gateway of its own). */
export function workerSlot(): string | undefined {
  if (!cluster.isWorker) return undefined;
  const slot = process.env[WORKER_SLOT_VARIABLE];
  return slot === undefined || slot === '' ? undefined : slot;
}

/** The primary's pid, set by the primary when it forks a worker: the worker's orphan watch. */
export const PRIMARY_PID_VARIABLE = 'PORTICO_PRIMARY_PID';
