/**
 * The bench's memory target (measure/bench/report.ts): issue 33 bounds the gateway's peak RSS
 * through the bench at 150 MiB, for the gateway as shipped and for the ladder's rungs (each a
 * gateway process of its own), judged on the highest VmHWM of any round.
 */
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { printReport, type RowResult } from '../../measure/bench/report.ts';
import type { GatewayProcess } from '../../measure/bench/processes.ts';
import { benchSample } from './support/bench-sample.ts';

const gateway = { url: 'https://127.0.0.1:1', admin: 'http://127.0.0.1:2' } as GatewayProcess;

/** A gateway row whose rounds peaked at `peaks` MiB. */
function result(name: string, group: 'main' | 'ladder', peaks: number[], own = gateway): RowResult {
  const samples = peaks.map((peakRssMiB) => benchSample({ peakRssMiB }));
  const row = {
    name,
    group,
    measured: { process: {} as ChildProcess, role: 'gateway' as const },
    gateway: own,
    url: 'https://127.0.0.1:1/',
    headers: () => ({}),
    expectedStatus: 200,
    note: '',
  };
  return { row, samples };
}

function printed(results: RowResult[]): string[] {
  const lines: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((line?: string) => lines.push(line ?? ''));
  printReport(results);
  return lines;
}

afterEach(() => vi.restoreAllMocks());

describe('the bench’s peak RSS target', () => {
  it('judges the shipped gateway’s highest peak against 150 MiB', () => {
    const lines = printed([
      result('gateway, cache miss', 'main', [140, 162.5]),
      result('gateway, cache hit', 'main', [150]),
    ]);
    expect(lines).toContain('  gateway peak RSS through the bench: 162.5 MiB (target < 150: NOT met)');
  });

  it('meets it below 150 MiB', () => {
    const lines = printed([result('gateway, cache miss', 'main', [149.9])]);
    expect(lines).toContain('  gateway peak RSS through the bench: 149.9 MiB (target < 150: met)');
  });

  it('judges the ladder’s rungs too, naming the one that peaked highest', () => {
    const lines = printed([
      result('gateway, cache miss', 'main', [140]),
      result('ladder 1: TLS pass-through', 'ladder', [131], { ...gateway }),
      result('ladder 8: + stage timing (default)', 'ladder', [155.2, 150.1], { ...gateway }),
    ]);
    expect(lines).toContain(
      '  ladder rungs’ peak RSS: 155.2 MiB in ladder 8: + stage timing (default) (target < 150: NOT met)',
    );
  });
});
