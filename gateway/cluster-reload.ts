/**
 * `POST /config/reload` and `npm run -s reload` under GATEWAY_WORKERS: the worker that takes the
 * admin connection asks the primary, which has every live worker reload its config file and
 * answers with what each did (config/reload-summary.ts). Before, the reload reached that one
 * worker only; the others kept their pipeline until their own file watcher or a SIGHUP (never,
 * for a file they cannot watch), while the answer said "applied".
 *
 * A worker still starting (a replacement) is not asked: it reads the file as it starts.
 */
import type { Worker } from 'node:cluster';
import type { ReloadResult } from './config/reload.ts';
import { summariseWorkers, type WorkerReload, type WorkersReloadResult } from './config/reload-summary.ts';
import { answerPrimary, askPrimary, askWorker } from './worker-channel.ts';

/** Worker → primary: reload every worker; primary → that worker: what each did. */
export const RELOAD_ALL = { request: 'portico:reload-all', reply: 'portico:reload-all-done' } as const;
/** Primary → each worker: reload your file; that worker → primary: its ReloadResult. */
const RELOAD_ONE = { request: 'portico:reload-one', reply: 'portico:reload-one-done' } as const;

/**
 * A worker silent this long after the primary asked it is reported, not waited for: a worker
 * stuck (or stopped) must not hold the answer of the others. Building a pipeline takes well
 * under a second; a refused one, less.
 */
export const WORKER_RELOAD_TIMEOUT_MS = 5000;
/** The asking worker's bound on the primary's answer: the primary's own bound, and a margin. */
const PRIMARY_TIMEOUT_MS = WORKER_RELOAD_TIMEOUT_MS + 2000;

/**
 * In a worker: reloads this worker's file (`local`) when the primary asks, and returns what the
 * admin endpoint runs: the reload of every worker, through the primary.
 */
export function reloadAcrossWorkers(local: () => Promise<ReloadResult>): () => Promise<WorkersReloadResult> {
  answerPrimary(RELOAD_ONE, local);
  return askPrimary<WorkersReloadResult>(
    RELOAD_ALL,
    PRIMARY_TIMEOUT_MS,
    "the primary did not answer with the workers' reloads",
  );
}

/** In the primary: has each live worker (with its slot) reload, and sums up what each did. */
export async function reloadEveryWorker(
  workers: readonly { worker: Worker; slot: number }[],
): Promise<WorkersReloadResult> {
  const answers = await Promise.all(
    workers.map(async ({ worker, slot }): Promise<WorkerReload> => {
      const who = { worker: slot, pid: worker.process.pid ?? 0 };
      const answer = await askWorker(worker, RELOAD_ONE, WORKER_RELOAD_TIMEOUT_MS);
      const silent =
        'silent' in answer
          ? answer.silent
          : answer.reply.error === undefined
            ? undefined
            : `failed: ${answer.reply.error}`;
      if (silent !== undefined) return { ...who, outcome: 'no answer', message: silent };
      return { ...who, ...(answer as { reply: { value: ReloadResult } }).reply.value };
    }),
  );
  return summariseWorkers(answers);
}
