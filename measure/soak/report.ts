/**
 * The soak's output: one table row per minute, the totals by kind and status, the unexpected
 * answers with a sample each, and the verdict.
 */
import type { ProcessSample, Sample as ProcessesSample } from './sampler.ts';
import { KINDS, type Kind, type MinuteCounts, type Tally } from './tally.ts';

/** One minute as printed and judged. */
export interface MinuteRow {
  minute: number;
  seconds: number;
  requests: number;
  unexpected: number;
  statuses: Map<string, number>;
  gateway: Figures;
  service: Figures;
  gatewayRedisClients: number | undefined;
  redisClients: number | undefined;
}

interface Figures {
  rssMiB: number | undefined;
  /** VmHWM at the minute's last sample: the most held at once since the process started. */
  peakRssMiB: number | undefined;
  heapMiB: number | undefined;
  fds: number | undefined;
  /** V8's heap as reserved (not judged): what RSS follows when the heap grows its room. */
  heapTotalMiB: number | undefined;
}

/**
 * Issue 33's bound on the gateway's peak RSS through the soak: judged on VmHWM, which a
 * minute's median sample (the table's RSS) stays well under.
 */
export const PEAK_RSS_LIMIT_MIB = 200;
/** Flatness tolerances: last minute against the second (the first one warms up). */
const MEMORY_TOLERANCE = 0.1;
const FD_TOLERANCE = { fraction: 0.1, absolute: 10 };
/** What each kind must have got at least once, or the run did not exercise what it claims. */
export const MUST_SEE: readonly [Kind, string][] = [
  ['read', '200'],
  ['list', '200'],
  ['conditional', '304'],
  ['create', '201'],
  ['patch', '200'],
  ['pay', '201'],
  ['hammer', '429'],
  ['bad-token', '401'],
];

function highest(values: number[]): number | undefined {
  const finite = values.filter((v) => Number.isFinite(v));
  return finite.length === 0 ? undefined : Math.max(...finite);
}

function median(values: number[]): number | undefined {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  return sorted.length === 0 ? undefined : sorted[Math.floor((sorted.length - 1) / 2)];
}

/** Heap after each major collection the minute's samples saw, each collection counted once. */
function heapAfterCollections(samples: ProcessSample[]): number[] {
  const byCollection = new Map<number, number>();
  for (const { majorGcs, heapAfterGcMiB } of samples) {
    if (majorGcs !== undefined && heapAfterGcMiB !== undefined) byCollection.set(majorGcs, heapAfterGcMiB);
  }
  return [...byCollection.values()];
}

/**
 * One minute from its counts and its samples: RSS, fds and heap total are the minute's median
 * sample (one burst does not make a trend), heap the median of its major collections, peak
 * RSS the highest VmHWM (which only grows: the last sample's).
 */
export function minuteRow(
  minute: number,
  counts: MinuteCounts,
  samples: ProcessesSample[],
  now: number,
): MinuteRow {
  const figures = (role: 'gateway' | 'service'): Figures => ({
    rssMiB: median(samples.map((s) => s[role].rssMiB)),
    peakRssMiB: highest(samples.map((s) => s[role].peakRssMiB)),
    heapMiB: median(heapAfterCollections(samples.map((s) => s[role]))),
    fds: median(samples.map((s) => s[role].fds)),
    heapTotalMiB: median(samples.flatMap((s) => s[role].heapTotalMiB ?? [])),
  });
  return {
    minute,
    seconds: (now - counts.startedAt) / 1000,
    requests: counts.requests,
    unexpected: counts.unexpected,
    statuses: counts.statuses,
    gateway: figures('gateway'),
    service: figures('service'),
    gatewayRedisClients: median(samples.flatMap((s) => s.gatewayRedisClients ?? [])),
    redisClients: median(samples.flatMap((s) => s.redisClients ?? [])),
  };
}

const fixed = (value: number | undefined, digits = 1) =>
  value === undefined ? 'n/a' : value.toFixed(digits);
const short = (n: number) =>
  n >= 10_000 ? `${(n / 1000).toFixed(0)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : `${n}`;

function statusMix(statuses: Map<string, number>): string {
  return [...statuses]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([status, n]) => `${status}:${short(n)}`)
    .join(' ');
}

const COLUMNS: [string, number][] = [
  ['min', 3],
  ['req/s', 6],
  ['errors', 6],
  ['status mix', 44],
  ['gw RSS', 7],
  ['gw peak', 7],
  ['svc RSS', 7],
  ['gw heap', 7],
  ['svc heap', 8],
  ['gw fds', 6],
  ['svc fds', 7],
  ['redis gw/all', 12],
];

function line(cells: string[]): string {
  return cells
    .map((cell, i) => {
      const width = COLUMNS[i]?.[1] ?? 0;
      return i === 3 ? cell.padEnd(width) : cell.padStart(width);
    })
    .join('  ');
}

export function tableHeader(): string {
  return (
    `${line(COLUMNS.map(([name]) => name))}\n` +
    `${' '.repeat(66)}MiB (RSS: median sample; peak: VmHWM so far; heap: used after major GC, median)`
  );
}

/** V8's reserved heap by minute, to read RSS by: RSS grows when V8 gives its heap more room. */
export function formatHeapTotals(rows: MinuteRow[]): string[] {
  return (['gateway', 'service'] as const).map(
    (role) =>
      `heap total MiB by minute, ${role.padEnd(8)} ${rows.map((row) => fixed(row[role].heapTotalMiB, 0)).join(' ')}`,
  );
}

export function formatRow(row: MinuteRow): string {
  const redis = `${row.gatewayRedisClients ?? 'n/a'}/${row.redisClients ?? 'n/a'}`;
  return line([
    String(row.minute),
    (row.requests / Math.max(row.seconds, 1)).toFixed(0),
    String(row.unexpected),
    statusMix(row.statuses),
    fixed(row.gateway.rssMiB),
    fixed(row.gateway.peakRssMiB),
    fixed(row.service.rssMiB),
    fixed(row.gateway.heapMiB),
    fixed(row.service.heapMiB),
    fixed(row.gateway.fds, 0),
    fixed(row.service.fds, 0),
    redis,
  ]);
}

/** Requests by kind and status over the whole run, then the samples of what was unexpected. */
export function formatTotals(tally: Tally): string[] {
  const lines = [`totals: ${tally.requests} requests, ${tally.unexpected} unexpected`];
  for (const kind of KINDS) {
    const byStatus = tally.totals.get(kind);
    if (byStatus === undefined) continue;
    const sum = [...byStatus.values()].reduce((a, b) => a + b, 0);
    lines.push(`  ${kind.padEnd(12)}${String(sum).padStart(8)}   ${statusMix(byStatus)}`);
  }
  if (tally.samples.size > 0) lines.push('', 'unexpected answers (first of each, with how many like it):');
  for (const sample of tally.samples.values()) {
    lines.push(
      `  ${sample.count} x ${sample.kind} → ${sample.label}, first at ${sample.atSeconds} s: ${sample.request}`,
      `      ${sample.detail}`,
    );
  }
  return lines;
}

/** `last` within the tolerance of `second`; a drop is never a leak. */
function flat(
  what: string,
  second: number | undefined,
  last: number | undefined,
  allowed: (base: number) => number,
) {
  if (second === undefined || last === undefined) return { ok: true, text: `${what} n/a (not judged)` };
  const ok = last <= allowed(second);
  const change =
    second === 0 ? '' : ` (${last >= second ? '+' : ''}${(((last - second) / second) * 100).toFixed(1)}%)`;
  return { ok, text: `${what} ${second.toFixed(1)} → ${last.toFixed(1)}${change}${ok ? '' : ' GROWING'}` };
}

function flatness(rows: MinuteRow[]): { ok: boolean; lines: string[] } {
  const second = rows[1];
  const last = rows.at(-1);
  if (rows.length < 3 || second === undefined || last === undefined) {
    return {
      ok: true,
      lines: [
        `  flatness  not judged: ${rows.length} minute(s); it compares the last minute with the second ` +
          '(the first warms up), which needs at least 3',
      ],
    };
  }
  const lines: string[] = [];
  let ok = true;
  for (const role of ['gateway', 'service'] as const) {
    const memory = (base: number) => base * (1 + MEMORY_TOLERANCE);
    const fds = (base: number) => base + Math.max(FD_TOLERANCE.absolute, base * FD_TOLERANCE.fraction);
    const checks = [
      flat('RSS MiB', second[role].rssMiB, last[role].rssMiB, memory),
      flat('heap MiB', second[role].heapMiB, last[role].heapMiB, memory),
      flat('fds', second[role].fds, last[role].fds, fds),
    ];
    const pass = checks.every((c) => c.ok);
    ok &&= pass;
    lines.push(`  ${role.padEnd(8)}  ${pass ? 'PASS' : 'FAIL'}  ${checks.map((c) => c.text).join('; ')}`);
  }
  return { ok, lines };
}

/** The gateway's VmHWM at the end of the run against PEAK_RSS_LIMIT_MIB. */
function peakRss(gatewayPeakRssMiB: number): { ok: boolean; line: string } {
  const ok = gatewayPeakRssMiB < PEAK_RSS_LIMIT_MIB;
  return {
    ok,
    line:
      `  peak RSS  ${ok ? 'PASS' : 'FAIL'}  gateway ${gatewayPeakRssMiB.toFixed(1)} MiB ` +
      `(VmHWM, the most it held at once; limit < ${PEAK_RSS_LIMIT_MIB} MiB)`,
  };
}

/**
 * The verdict lines and whether the run passed. `gatewayPeakRssMiB` is the gateway's VmHWM
 * read after the traffic ended.
 */
export function verdict(
  rows: MinuteRow[],
  tally: Tally,
  gatewayPeakRssMiB: number,
): { pass: boolean; lines: string[] } {
  const statusesOk = tally.unexpected === 0;
  const missing = MUST_SEE.filter(([kind, status]) => tally.count(kind, status) === 0);
  const memory = flatness(rows);
  const peak = peakRss(gatewayPeakRssMiB);
  const pass = statusesOk && missing.length === 0 && memory.ok && peak.ok;
  return {
    pass,
    lines: [
      'verdict',
      `  statuses  ${statusesOk ? 'PASS' : 'FAIL'}  ${tally.unexpected} unexpected of ${tally.requests} answers`,
      `  coverage  ${missing.length === 0 ? 'PASS' : 'FAIL'}  ` +
        (missing.length === 0
          ? 'every kind got its main status (hammer 429, bad-token 401, conditional 304, ...)'
          : `never seen: ${missing.map(([kind, status]) => `${kind} ${status}`).join(', ')}`),
      ...memory.lines,
      peak.line,
      pass ? 'PASS' : 'FAIL',
    ],
  };
}
