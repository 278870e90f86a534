/**
 * The dashboard's config tile under GATEWAY_WORKERS: the worker that takes the admin connection
 * asks the primary, which asks every live worker for its config version and last reload. Before,
 * the tile showed whichever worker answered, so two workers on different versions (a reload one
 * of them refused) took turns on the page, each looking like the whole gateway.
 *
 * A worker that does not answer in time is listed with why, not waited for (as a reload does:
 * cluster-reload.ts); if the primary does not answer, the tile says it shows one worker's view.
 */
import type { Worker } from 'node:cluster';
import type { ConfigState, WorkerConfigState } from './observability/config-metrics.ts';
import { answerPrimary, askPrimary, askWorker } from './worker-channel.ts';

/** Worker → primary: every worker's config state; primary → that worker: the list. */
export const CONFIG_STATE_ALL = {
  request: 'portico:config-state-all',
  reply: 'portico:config-state-all-done',
} as const;
/** Primary → each worker: your config state; that worker → primary: its ConfigState. */
const CONFIG_STATE_ONE = {
  request: 'portico:config-state-one',
  reply: 'portico:config-state-one-done',
} as const;

/** A worker answers from memory at once; one silent this long is stuck or stopped. */
const WORKER_TIMEOUT_MS = 2000;
/** The asking worker's bound on the primary's answer: the primary's own bound, and a margin. */
const PRIMARY_TIMEOUT_MS = WORKER_TIMEOUT_MS + 1000;

/**
 * In a worker: answers the primary with this worker's state (`local`), and returns what the
 * dashboard reads: this worker's state with every worker's in `workers`.
 */
export function configStateAcrossWorkers(
  local: () => ConfigState | undefined,
): () => Promise<ConfigState | undefined> {
  answerPrimary(CONFIG_STATE_ONE, () => Promise.resolve(local()));
  const askAll = askPrimary<WorkerConfigState[]>(
    CONFIG_STATE_ALL,
    PRIMARY_TIMEOUT_MS,
    'the primary did not answer with the workers’ config',
  );
  return async () => {
    const here = local();
    if (here === undefined) return undefined;
    try {
      return { ...here, workers: await askAll() };
    } catch (error) {
      return { ...here, workersUnknown: (error as Error).message };
    }
  };
}

/** In the primary: each live worker's config state, by slot, or why it gave none. */
export function configStateOfEveryWorker(
  workers: readonly { worker: Worker; slot: number }[],
): Promise<WorkerConfigState[]> {
  return Promise.all(
    workers.map(async ({ worker, slot }): Promise<WorkerConfigState> => {
      const who = { worker: slot, pid: worker.process.pid ?? 0 };
      const answer = await askWorker(worker, CONFIG_STATE_ONE, WORKER_TIMEOUT_MS);
      if ('silent' in answer) return { ...who, message: answer.silent };
      const state = answer.reply.value as ConfigState | undefined;
      if (answer.reply.error !== undefined || state === undefined)
        return { ...who, message: answer.reply.error ?? 'still starting' };
      return { ...who, version: state.version, ...(state.lastReload && { lastReload: state.lastReload }) };
    }),
  ).then((states) => states.sort((a, b) => a.worker - b.worker));
}
