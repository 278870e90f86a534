/**
 * The bench's field section (measure/bench/report-field.ts): each ratio is the median of the
 * per-round ratios with its range, and a peer that could not run is printed as missing, in its
 * own line and in every ratio it belongs to, never left out.
 */
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FIELD } from '../../measure/bench/field.ts';
import { printField } from '../../measure/bench/report-field.ts';
import type { RowResult } from '../../measure/bench/report.ts';
import { benchSample } from './support/bench-sample.ts';

/** One row measured over rounds, `cpuPerRequest` µs per request in each. */
function result(name: string, group: 'main' | 'ladder' | 'field', cpuPerRequest: number[]): RowResult {
  const samples = cpuPerRequest.map((micros) => benchSample({ measuredCpuMicros: micros * 1000 }));
  const row = {
    name,
    group,
    measured: { process: {} as ChildProcess, role: 'peer' as const },
    url: 'https://127.0.0.1:1/',
    headers: () => ({}),
    expectedStatus: 200,
    note: '',
  };
  return { row, samples };
}

function printed(results: RowResult[], missing: { name: string; why: string }[]): string[] {
  const lines: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((line: string) => lines.push(line));
  printField(results, missing);
  return lines;
}

afterEach(() => vi.restoreAllMocks());

describe('the field section of the bench report', () => {
  it('gives a ratio as the median of the per-round ratios, with their range', () => {
    // Per round 0.5, 1.5, 0.5: median 0.5; the ratio of the medians would be 1.0.
    const lines = printed(
      [
        result('ladder 8: + stage timing (default)', 'ladder', [300, 900, 600]),
        result(FIELD.fastify, 'field', [600, 600, 1200]),
      ],
      [],
    );
    expect(lines).toContain('  full ÷ fastify assembled, CPU-µs/req: 0.50 [0.50–1.50] (target ≤ 0.75: met)');
  });

  it('prints a peer that could not run as missing, in its line and in its ratios', () => {
    const why = '/usr/sbin/nginx not found, and BENCH_NO_INSTALL forbids installing it';
    const lines = printed(
      [
        result('gateway, cache hit', 'main', [150]),
        result('ladder 8: + stage timing (default)', 'ladder', [300]),
      ],
      [
        { name: FIELD.nginxHit, why },
        { name: FIELD.nginxLog, why },
      ],
    );
    expect(lines).toContain(`  ${FIELD.nginxHit}: missing: ${why}`);
    expect(lines).toContain(`  ${FIELD.nginxLog}: missing: ${why}`);
    expect(lines).toContain(
      `  hit ÷ nginx proxy_cache hit, CPU-µs/req: missing (${FIELD.nginxHit}: missing: ${why})`,
    );
    expect(lines).toContain(
      `  full ÷ nginx with access log, CPU-µs/req: missing (${FIELD.nginxLog}: missing: ${why})`,
    );
    // A row left out by BENCH_ROWS is said to be, not skipped either.
    expect(lines).toContain(
      `  full ÷ fastify assembled, CPU-µs/req: missing (${FIELD.fastify}: not run (BENCH_ROWS))`,
    );
  });
});
