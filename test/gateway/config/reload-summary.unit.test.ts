/**
 * The answer of a reload of every worker (gateway/config/reload-summary.ts): its outcome is the
 * worst of the workers' (refused, then incomplete), its message names the workers that refused
 * or were silent, and a file read in two versions is said. The reload of real workers, end to
 * end: test/scale/workers-reload.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { ReloadResult } from '../../../gateway/config/reload.ts';
import { summariseWorkers, type WorkerReload } from '../../../gateway/config/reload-summary.ts';

const AT = '2026-11-27T05:00:00.000Z';
const result = (outcome: ReloadResult['outcome'], over: Partial<ReloadResult> = {}): ReloadResult => ({
  outcome,
  version: 'aaaaaaaaaaaa',
  applied: outcome === 'applied' ? ['routes'] : [],
  needsRestart: [],
  problems: outcome === 'refused' ? ['listenr: unknown key'] : [],
  at: AT,
  message: `${outcome} aaaaaaaaaaaa`,
  ...over,
});
const worker = (
  slot: number,
  answer: ReloadResult | { outcome: 'no answer'; message: string },
): WorkerReload => ({
  worker: slot,
  pid: 1000 + slot,
  ...answer,
});

describe('summariseWorkers', () => {
  it('applied on one, unchanged on the other (its watcher was first): applied, by slot', () => {
    const summary = summariseWorkers([worker(2, result('unchanged')), worker(1, result('applied'))], AT);
    expect(summary).toMatchObject({
      outcome: 'applied',
      version: 'aaaaaaaaaaaa',
      applied: ['routes'],
      problems: [],
      message: 'applied aaaaaaaaaaaa on all 2 workers: routes',
    });
    expect(summary.workers.map((w) => w.worker)).toEqual([1, 2]);
  });

  it('one refusal is the outcome, whatever the others did; problems once', () => {
    const summary = summariseWorkers(
      [worker(1, result('refused')), worker(2, result('applied')), worker(3, result('refused'))],
      AT,
    );
    expect(summary.outcome).toBe('refused');
    expect(summary.problems).toEqual(['listenr: unknown key']);
    expect(summary.message).toBe('refused aaaaaaaaaaaa by workers 1, 3 of 3: they keep the running config');
    expect(summariseWorkers([worker(2, result('refused')), worker(1, result('unchanged'))], AT).message).toBe(
      'refused aaaaaaaaaaaa by worker 2 of 2: it keeps the running config',
    );
  });

  it('a silent worker makes it incomplete, unless another refused', () => {
    const silent = worker(2, { outcome: 'no answer', message: 'did not answer within 5 s' });
    const incomplete = summariseWorkers([worker(1, result('applied')), silent], AT);
    expect(incomplete).toMatchObject({
      outcome: 'incomplete',
      version: 'aaaaaaaaaaaa',
      message: 'incomplete aaaaaaaaaaaa: no answer from worker 2 of 2',
    });
    expect(summariseWorkers([worker(1, result('refused')), silent], AT).outcome).toBe('refused');
    expect(summariseWorkers([silent], AT)).toMatchObject({ outcome: 'incomplete', version: 'unknown' });
  });

  it('unchanged everywhere, with keys that need a restart; two versions read are said', () => {
    const restart = result('unchanged', { needsRestart: ['admin.readinessTimeoutMs'] });
    expect(summariseWorkers([worker(1, restart), worker(2, restart)], AT).message).toBe(
      'unchanged aaaaaaaaaaaa on all 2 workers: nothing that reloads has changed; needs a restart: admin.readinessTimeoutMs',
    );
    const newer = result('applied', { version: 'bbbbbbbbbbbb' });
    expect(summariseWorkers([worker(1, result('applied')), worker(2, newer)], AT).message).toBe(
      'applied aaaaaaaaaaaa on all 2 workers: routes; the workers read different versions (aaaaaaaaaaaa, bbbbbbbbbbbb): reload again',
    );
  });
});
