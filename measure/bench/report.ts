/**
 * The bench's output: the main rows and the cost ladder, each figure the median over the
 * rounds with its range, then the targets as ratios. Failures are printed next to the figures
 * they affect, never left out.
 */
import { LEGEND } from './legend.ts';
import type { Sample } from './measure.ts';
import { BASELINE_ROWS, MAIN_GATEWAY_ROWS } from './row-choice.ts';
import type { Row } from './rows.ts';

export interface RowResult {
  row: Row;
  samples: Sample[];
}

export function median(values: readonly number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export const perRequest = (sample: Sample) =>
  sample.load.responses === 0 ? Number.NaN : sample.measuredCpuMicros / sample.load.responses;
const servicePerRequest = (sample: Sample) =>
  sample.load.responses === 0 ? Number.NaN : sample.serviceCpuMicros / sample.load.responses;
const requestsPerSecond = (sample: Sample) =>
  sample.load.seconds > 0 ? sample.load.responses / sample.load.seconds : 0;

export const fixed = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : '—');

/** `median [min–max]` of one figure over the rounds. */
export function spread(values: number[], digits: number): string {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return '—';
  return `${fixed(median(finite), digits)} [${fixed(Math.min(...finite), digits)}–${fixed(Math.max(...finite), digits)}]`;
}

/** Responses other than the expected status, and connection errors, over all rounds. */
function unexpected(result: RowResult): string {
  const counts = new Map<string, number>();
  let errors = 0;
  let timeouts = 0;
  for (const { load } of result.samples) {
    for (const [code, count] of Object.entries(load.statuses))
      if (Number(code) !== result.row.expectedStatus) counts.set(code, (counts.get(code) ?? 0) + count);
    errors += load.errors;
    timeouts += load.timeouts;
  }
  const parts = [...counts].map(([code, count]) => `${count}×${code}`);
  if (errors > 0) parts.push(`${errors} errors`);
  if (timeouts > 0) parts.push(`${timeouts} timeouts`);
  const probes = result.samples.filter((s) => s.probeStatus !== result.row.expectedStatus);
  if (probes.length > 0) parts.push(`probe answered ${probes.map((s) => s.probeStatus).join(',')}`);
  return parts.length === 0 ? 'none' : `!! ${parts.join(', ')}`;
}

export function cells(result: RowResult, step?: number): string[] {
  const { row, samples } = result;
  const isService = row.measured.role === 'service';
  const answered = samples.reduce((sum, s) => sum + (s.load.statuses[String(row.expectedStatus)] ?? 0), 0);
  return [
    row.name,
    spread(samples.map(requestsPerSecond), 0),
    fixed(median(samples.map((s) => s.load.p50)), 2),
    fixed(median(samples.map((s) => s.load.p99)), 2),
    isService ? '—' : spread(samples.map(perRequest), 1),
    ...(step === undefined ? [] : [fixed(step, 1)]),
    fixed(median(samples.map(servicePerRequest)), 1),
    `${fixed(median(samples.map((s) => s.busyPercent)), 0)}%`,
    fixed(Math.max(...samples.map((s) => s.peakRssMiB)), 1) + (isService ? ' (svc)' : ''),
    `${answered}×${row.expectedStatus}`,
    unexpected(result),
  ];
}

export function printGrid(headers: string[], rows: string[][], textColumns: Set<number>): void {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (row: string[]) =>
    `| ${row.map((cell, i) => (textColumns.has(i) ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(' | ')} |`;
  console.log(line(headers));
  console.log(
    `|${widths.map((w, i) => (textColumns.has(i) ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
  );
  for (const row of rows) console.log(line(row));
}

export const HEADERS = [
  'row',
  'req/s',
  'p50 ms',
  'p99 ms',
  'CPU-µs/req',
  'service CPU-µs/req',
  'busy',
  'peak RSS MiB',
  'answered',
  'unexpected',
];

function printLadder(ladder: RowResult[]): void {
  const headers = [...HEADERS.slice(0, 5), 'step µs', ...HEADERS.slice(5)];
  let previous: number | undefined;
  const cpuOf = (result: RowResult) => median(result.samples.map(perRequest));
  const rows = ladder.map((result) => {
    const cpu = cpuOf(result);
    // The peer is the reference, not a rung: no step into or out of it.
    const isPeer = result.row.measured.role === 'peer';
    // A variant of an earlier rung (another kind of token, say) is priced against that rung.
    const { stepFrom } = result.row;
    const from = stepFrom === undefined ? undefined : ladder.find((other) => other.row.name === stepFrom);
    const base = stepFrom === undefined ? previous : from === undefined ? undefined : cpuOf(from);
    const step = isPeer || base === undefined ? Number.NaN : cpu - base;
    if (!isPeer) previous = cpu;
    return cells(result, step);
  });
  printGrid(headers, rows, new Set([0, 9, 10]));
}

/** Median and range of a ratio taken round by round, so both sides share each round's noise. */
export function roundRatio(a: RowResult, b: RowResult, figure: (s: Sample) => number): number[] {
  return a.samples.map((sample, i) => figure(sample) / figure(b.samples[i]!));
}

function target(name: string, values: number[], goal: string, met: (value: number) => boolean): string {
  const value = median(values);
  return `  ${name}: ${spread(values, 2)} (target ${goal}: ${Number.isFinite(value) && met(value) ? 'met' : 'NOT met'})`;
}

/** Issue 33's bound on a gateway process's peak RSS through the bench (issue 17's was 200). */
const PEAK_RSS_TARGET_MIB = 150;

/** The highest VmHWM any round of these rows saw. */
function highestPeak(results: RowResult[]): number {
  return Math.max(...results.flatMap((r) => r.samples.map((s) => s.peakRssMiB)));
}

function rssTarget(peak: number): string {
  return `(target < ${PEAK_RSS_TARGET_MIB}: ${peak < PEAK_RSS_TARGET_MIB ? 'met' : 'NOT met'})`;
}

function printTargets(results: RowResult[]): void {
  const find = (name: string) => results.find((result) => result.row.name.startsWith(name));
  const [miss, hit, direct, peer] = [
    MAIN_GATEWAY_ROWS.miss,
    MAIN_GATEWAY_ROWS.hit,
    'direct',
    'http-proxy',
  ].map(find);
  console.log('Targets (median of the per-round ratios [range])');
  if (miss !== undefined && peer !== undefined)
    console.log(
      target(
        'full pipeline CPU/req ÷ http-proxy CPU/req',
        roundRatio(miss, peer, perRequest),
        '≤ 1.50',
        (v) => v <= 1.5,
      ),
    );
  if (hit !== undefined && direct !== undefined)
    console.log(
      target(
        'cache-hit req/s ÷ direct service req/s',
        roundRatio(hit, direct, requestsPerSecond),
        '≥ 1.50',
        (v) => v >= 1.5,
      ),
    );
  if (miss !== undefined) {
    const peak = highestPeak(results.filter((r) => r.row.gateway === miss.row.gateway));
    console.log(`  gateway peak RSS through the bench: ${fixed(peak, 1)} MiB ${rssTarget(peak)}`);
  }
  const rungs = results.filter((r) => r.row.group === 'ladder' && r.row.measured.role === 'gateway');
  if (rungs.length > 0) {
    const top = rungs.reduce((a, b) => (highestPeak([b]) > highestPeak([a]) ? b : a));
    const peak = highestPeak([top]);
    console.log(`  ladder rungs’ peak RSS: ${fixed(peak, 1)} MiB in ${top.row.name} ${rssTarget(peak)}`);
  }
  // This build ÷ baseline needs only the two rows; the baseline's own ratio, the reference too.
  const [baselineMiss, baselineHit] = BASELINE_ROWS.map(find);
  if (miss !== undefined && baselineMiss !== undefined)
    console.log(
      `  baseline build, miss: ${peer === undefined ? '' : `full pipeline CPU/req ÷ http-proxy CPU/req: ${spread(roundRatio(baselineMiss, peer, perRequest), 2)}; `}this build ÷ baseline, CPU/req: ${spread(roundRatio(miss, baselineMiss, perRequest), 2)}`,
    );
  if (hit !== undefined && baselineHit !== undefined)
    console.log(
      `  baseline build, hit: ${direct === undefined ? '' : `cache-hit req/s ÷ direct service req/s: ${spread(roundRatio(baselineHit, direct, requestsPerSecond), 2)}; `}this build ÷ baseline, req/s: ${spread(roundRatio(hit, baselineHit, requestsPerSecond), 2)}, CPU/req: ${spread(roundRatio(hit, baselineHit, perRequest), 2)}`,
    );
  const ladderPeer = find('ladder 0');
  // The last rung on the plain hop the peer also uses (the mutual-TLS rung comes after it).
  const full = find('ladder 8');
  if (ladderPeer !== undefined && full !== undefined && full !== ladderPeer)
    console.log(
      `  ladder, full pipeline ÷ peer on the static upstream: ${spread(roundRatio(full, ladderPeer, perRequest), 2)}`,
    );
}

export function printReport(results: RowResult[]): void {
  const main = results.filter((result) => result.row.group === 'main');
  const ladder = results.filter((result) => result.row.group === 'ladder');
  if (main.length > 0)
    printGrid(
      HEADERS,
      main.map((result) => cells(result)),
      new Set([0, 8, 9]),
    );
  if (ladder.length > 0) {
    console.log('');
    console.log('Cost ladder: the same request on one static upstream, one stage added per rung');
    printLadder(ladder);
  }
  console.log('');
  console.log(LEGEND);
  console.log('');
  console.log('Per row: the probe, then each round: how busy each CPU was, and the gateway counters');
  for (const { row, samples } of results) {
    const probe =
      samples[0]?.cacheStatus === undefined ? '' : ` probe Cache-Status: ${samples[0].cacheStatus};`;
    console.log(
      `  ${row.name}:${probe} ${samples.map((s, i) => `r${i + 1} ${s.checks.join(', ')}`).join(' | ')}`,
    );
  }
  console.log('');
  printTargets(results);
}
