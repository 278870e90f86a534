/**
 * The bench's output: one table of the rows measured in this run, what each row measures,
 * and the README's two targets as ratios. Failures are printed next to the figures they
 * affect, never left out.
 */
import type { LoadResult } from './load.ts';

export interface Measured {
  name: string;
  measured: 'service' | 'peer' | 'gateway';
  load: LoadResult;
  expectedStatus: number;
  /** CPU (user + system, all threads) of the measured process over the row. */
  measuredCpuMicros: number;
  serviceCpuMicros: number;
  busyPercent: number;
  peakRssMiB: number;
  note: string;
  /** What the row's own counters and probe showed (cache results, audit records, Redis). */
  checks: string[];
  cacheStatus: string | undefined;
}

const perRequest = (micros: number, load: LoadResult) =>
  load.responses === 0 ? Number.NaN : micros / load.responses;

function requestsPerSecond(row: Measured): number {
  return row.load.seconds > 0 ? row.load.responses / row.load.seconds : 0;
}

/** Responses other than the expected status, and connection errors: shown, never hidden. */
function problems(row: Measured): string {
  const unexpected = Object.entries(row.load.statuses).filter(
    ([code]) => Number(code) !== row.expectedStatus,
  );
  const parts = unexpected.map(([code, count]) => `${count}×${code}`);
  if (row.load.errors > 0) parts.push(`${row.load.errors} errors`);
  if (row.load.timeouts > 0) parts.push(`${row.load.timeouts} timeouts`);
  return parts.length === 0 ? 'none' : `!! ${parts.join(', ')}`;
}

function cells(row: Measured): string[] {
  const fixed = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : '—');
  const isService = row.measured === 'service';
  return [
    row.name,
    fixed(requestsPerSecond(row), 0),
    fixed(row.load.p50, 2),
    fixed(row.load.p99, 2),
    isService ? '—' : fixed(perRequest(row.measuredCpuMicros, row.load), 1),
    fixed(perRequest(row.serviceCpuMicros, row.load), 1),
    `${fixed(row.busyPercent, 0)}%`,
    fixed(row.peakRssMiB, 1) + (isService ? ' (svc)' : ''),
    `${row.load.statuses[String(row.expectedStatus)] ?? 0}×${row.expectedStatus}`,
    problems(row),
    row.note,
  ];
}

const HEADERS = [
  'row',
  'req/s',
  'p50 ms',
  'p99 ms',
  'gateway CPU-µs/req',
  'service CPU-µs/req',
  'busy',
  'peak RSS MiB',
  'answered',
  'unexpected',
  'note',
];

function printGrid(rows: string[][]): void {
  const widths = HEADERS.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  // Text columns left-aligned, figures right-aligned.
  const textColumns = new Set([0, 8, 9, 10]);
  const line = (row: string[]) =>
    `| ${row.map((cell, i) => (textColumns.has(i) ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(' | ')} |`;
  console.log(line(HEADERS));
  console.log(
    `|${widths.map((w, i) => (textColumns.has(i) ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
  );
  for (const row of rows) console.log(line(row));
}

function ratio(name: string, value: number, target: string, met: boolean): string {
  return `${name}: ${Number.isFinite(value) ? value.toFixed(2) : '—'} (target ${target}: ${met ? 'met' : 'NOT met'})`;
}

const LEGEND = `How to read it
  gateway CPU-µs/req   utime+stime of the gateway process (/proc/<pid>/stat, all threads) over the
                       row ÷ responses; in the peer row, of the http-proxy process; "—" in the direct
                       row (see the service column).
  service CPU-µs/req   the same for the resource service (PostgreSQL and Redis not included).
  busy                 CPU time ÷ wall time of the measured process (gateway, http-proxy, or the
                       service in the direct row): near 100% means it was the bottleneck on its CPU.
                       Well below, something else limited the row: in the miss and peer rows, CPU 1
                       (load generator + service + unpinned PostgreSQL) is the busier one, so their
                       req/s are bounded by it; CPU-µs per request is the figure to compare.
  peak RSS MiB         VmHWM of the measured process at the end of its row: the peak since the
                       process started, so later gateway rows include the earlier ones.
  answered/unexpected  responses with the status the row expects / any other status, connection
                       error or timeout (req/s and latencies count every response).

  direct service       GET /v1/orders/{id} over plain HTTP with the signed identity assertion the
                       gateway would add: the service verifies it, reads PostgreSQL, answers 200.
  gateway, cache miss  the full pipeline: HTTPS, JWT (verified once, then from the verified-token
                       cache: the steady state of a client reusing its token), Redis fixed-window
                       limit (limit 10^9, never refuses), cache lookup, proxy to the service over
                       keep-alive with a signed assertion, audit record to a file, request log line.
                       The request carries Cache-Control: no-store, so the cache looks up a key it
                       never stores: every request is a real miss that goes upstream. The one cost of
                       a first read missing here is copying the body into the cache.
  gateway, cache hit   the same pipeline, on the order the direct and peer rows read; the row's probe
                       stores it (Portico-Cache-Control: max-age=30, per customer), then every request
                       of the row is answered from the cache, without an upstream call.
  gateway, 304 at edge the same, with If-None-Match of the current ETag: the gateway answers 304 from
                       its fresh entry; nothing reaches the service (no upstream revalidation).
  http-proxy (peer)    http-proxy 1.18.1 behind node:https with the same certificate and a keep-alive
                       agent upstream: no auth, no limits, no cache, no audit, no request log. The
                       client sends the signed assertion itself, as in the direct row.
  TLS                  autocannon 9 forces rejectUnauthorized: false; each row first sends one request
                       with the certificate verified against the bench CA (the probe below).

Checks per row: machine = how busy each CPU was over the run (every process, ours included);
probe = that one verified request; cache/audit/redis = gateway counters over the measured run.`;

export function printTable(rows: Measured[]): void {
  printGrid(rows.map(cells));
  console.log('');
  console.log(LEGEND);
  for (const row of rows) {
    const probe = row.cacheStatus === undefined ? '' : `probe Cache-Status: ${row.cacheStatus}; `;
    console.log(`  ${row.name}: ${probe}${row.checks.join('; ')}`);
  }

  const find = (name: string) => rows.find((row) => row.name.startsWith(name));
  const miss = find('gateway, cache miss');
  const hit = find('gateway, cache hit');
  const direct = find('direct');
  const peer = find('http-proxy');
  console.log('');
  console.log('Targets (README)');
  if (miss !== undefined && peer !== undefined) {
    const value =
      perRequest(miss.measuredCpuMicros, miss.load) / perRequest(peer.measuredCpuMicros, peer.load);
    console.log(`  ${ratio('full pipeline CPU/req ÷ http-proxy CPU/req', value, '≤ 1.00', value <= 1)}`);
  }
  if (hit !== undefined && direct !== undefined) {
    const value = requestsPerSecond(hit) / requestsPerSecond(direct);
    console.log(`  ${ratio('cache-hit req/s ÷ direct service req/s', value, '≥ 1.00', value >= 1)}`);
  }
}
