/**
 * A reload of every worker (GATEWAY_WORKERS above 1) in one answer: what each worker did, and
 * the outcome of them all. A gateway of one process answers its ReloadResult alone (reload.ts);
 * this is that shape with `workers` added, so that a client of the one reads the other.
 */
import type { ReloadResult } from './reload.ts';

/** What one worker did: its ReloadResult, or why there is none (silent, exited, failed). */
export type WorkerReload = { worker: number; pid: number } & (
  ReloadResult | { outcome: 'no answer'; message: string }
);

/** The reload of every live worker. */
export interface WorkersReloadResult extends Omit<ReloadResult, 'outcome'> {
  /**
   * `refused` when any worker refused (those keep their running config); else `incomplete` when
   * any did not answer; else `applied` when any applied; else `unchanged`.
   */
  outcome: ReloadResult['outcome'] | 'incomplete';
  /** Each live worker, by slot (1..N). */
  workers: WorkerReload[];
}

/** What `POST /config/reload` answers: one process's result, or every worker's. */
export type ReloadAnswer = ReloadResult | WorkersReloadResult;

type Answered = Extract<WorkerReload, { version: string }>;

/**
 * The workers' results as one: `version`, `applied`, `needsRestart` and `problems` gathered from
 * the workers that answered (the lowest slot's version), and a message naming the workers that
 * refused or were silent.
 */
export function summariseWorkers(
  workers: WorkerReload[],
  at = new Date().toISOString(),
): WorkersReloadResult {
  const sorted = [...workers].sort((a, b) => a.worker - b.worker);
  const answered = sorted.filter((w): w is Answered => w.outcome !== 'no answer');
  const some = (outcome: WorkerReload['outcome']) => sorted.some((w) => w.outcome === outcome);
  const gathered = (pick: (w: Answered) => string[]) => [...new Set(answered.flatMap(pick))];
  const result = {
    outcome: some('refused')
      ? ('refused' as const)
      : some('no answer')
        ? ('incomplete' as const)
        : some('applied')
          ? ('applied' as const)
          : ('unchanged' as const),
    version: answered[0]?.version ?? 'unknown',
    applied: gathered((w) => w.applied).sort(),
    needsRestart: gathered((w) => w.needsRestart),
    problems: gathered((w) => w.problems),
    at,
    workers: sorted,
  };
  return { ...result, message: describeWorkers(result, answered) };
}

/** The summary in one line; each worker's own result follows in `workers`. */
function describeWorkers(result: Omit<WorkersReloadResult, 'message'>, answered: Answered[]): string {
  const { outcome, version, workers } = result;
  const slots = (kind: WorkerReload['outcome']) =>
    workers.filter((w) => w.outcome === kind).map((w) => w.worker);
  const named = (list: number[]) =>
    `${list.length === 1 ? 'worker' : 'workers'} ${list.join(', ')} of ${workers.length}`;
  const restart =
    result.needsRestart.length === 0 ? '' : `; needs a restart: ${result.needsRestart.join(', ')}`;
  const versions = [...new Set(answered.map((w) => w.version))];
  // The file changed between two workers' reads: they may run different versions now.
  const split =
    versions.length > 1 ? `; the workers read different versions (${versions.join(', ')}): reload again` : '';
  if (outcome === 'refused') {
    const refused = slots('refused');
    return `refused ${version} by ${named(refused)}: ${refused.length === 1 ? 'it keeps' : 'they keep'} the running config${split}`;
  }
  if (outcome === 'incomplete')
    return `incomplete ${version}: no answer from ${named(slots('no answer'))}${split}`;
  if (outcome === 'applied')
    return `applied ${version} on all ${workers.length} workers: ${result.applied.join(', ')}${restart}${split}`;
  return `unchanged ${version} on all ${workers.length} workers: nothing that reloads has changed${restart}${split}`;
}
