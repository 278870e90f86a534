/**
 * One row measured once (one round): a verified probe, a warm-up, then autocannon for the
 * row's duration in its own process while the measured process's CPU is read from /proc.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { Agent } from 'undici';
import { request } from 'undici';
import {
  cpuBusySince,
  cpuJiffies,
  cpuMicros,
  moveToCpu,
  startNode,
  stdoutOf,
  treeCpuMicros,
  treePeakRssMiB,
} from './children.ts';
import { heapSampleDir, openHeapWindow } from './heap-window.ts';
import type { LoadOptions, LoadResult } from './load.ts';
import type { Running, Settings } from './processes.ts';
import type { Row } from './rows.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
/** Lets queued work (audit records are written a few ms after the response) land in the row. */
const SETTLE_MS = 500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One round of one row. */
export interface Sample {
  load: LoadResult;
  /** CPU (user + system, all threads) of the measured process over the round. */
  measuredCpuMicros: number;
  serviceCpuMicros: number;
  /** CPU time ÷ wall time of the measured process. */
  busyPercent: number;
  peakRssMiB: number;
  /** What the round's probe and counters showed (cache results, audit records, Redis). */
  checks: string[];
  probeStatus: number;
  cacheStatus: string | undefined;
}

/** One request with the certificate checked against the bench CA: status and Cache-Status. */
async function probe(row: Row, tls: Agent): Promise<{ status: number; cacheStatus: string | undefined }> {
  const response = await request(row.url, { headers: row.headers(), dispatcher: tls });
  await response.body.dump();
  const value = response.headers['cache-status'];
  return { status: response.statusCode, cacheStatus: Array.isArray(value) ? value.join(', ') : value };
}

/** Drives `options` from the load generator's CPU (autocannon, or node:http2 for h2 rows). */
export async function runLoad(running: Running, options: LoadOptions, protocol?: 'h2'): Promise<LoadResult> {
  const driver = protocol === 'h2' ? 'measure/bench/load-h2.ts' : 'measure/bench/load.ts';
  const child = startNode([join(ROOT, driver), JSON.stringify(options)], {
    cpu: running.placement.others,
    captureStdout: true,
  });
  return JSON.parse(await stdoutOf(child)) as LoadResult;
}

/** Reads a gateway's own counters, to show that a row was what it claims to be. */
async function gatewayCounters(adminUrl: string): Promise<Record<string, number>> {
  const response = await request(`${adminUrl}/metrics`);
  const text = await response.body.text();
  const read = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? 0);
  return {
    hit: read(/^portico_cache_requests_total\{result="hit"\} (\S+)$/m),
    miss: read(/^portico_cache_requests_total\{result="miss"\} (\S+)$/m),
    redisFailures: read(/^portico_ratelimit_store_failures (\S+)$/m),
  };
}

function countLines(file: string | undefined): number {
  if (file === undefined) return 0;
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return 0; // not written yet
  }
  const buffer = Buffer.alloc(1 << 20);
  let lines = 0;
  try {
    for (let read = readSync(fd, buffer); read > 0; read = readSync(fd, buffer)) {
      for (let i = 0; i < read; i++) if (buffer[i] === 0x0a) lines++;
    }
  } finally {
    closeSync(fd);
  }
  return lines;
}

export async function measureRow(
  running: Running,
  row: Row,
  tls: Agent,
  settings: Settings,
  warmupSeconds: number,
  round: number,
): Promise<Sample> {
  const { placement, service } = running;
  // The process under test gets the measured CPU to itself; the service moves aside otherwise.
  moveToCpu(service.pid!, row.measured.role === 'service' ? placement.measured : placement.others);
  const pid = row.measured.process.pid!;
  const check = await probe(row, tls);
  const load: LoadOptions = {
    url: row.url,
    connections: settings.connections,
    duration: settings.duration,
    headers: {},
    ...(row.dpop === undefined ? {} : { dpop: row.dpop }),
  };
  if (warmupSeconds > 0)
    await runLoad(running, { ...load, duration: warmupSeconds, headers: row.headers() }, row.protocol);
  await sleep(SETTLE_MS);

  const countersBefore = row.gateway === undefined ? undefined : await gatewayCounters(row.gateway.admin);
  const auditBefore = countLines(row.gateway?.auditLog);
  const machine = cpuJiffies();
  // The measured process with its children: a gateway with GATEWAY_WORKERS works in its workers.
  const before = { measured: treeCpuMicros(pid), service: cpuMicros(service.pid!), at: performance.now() };
  const heapDir = row.measured.role === 'gateway' ? heapSampleDir() : undefined;
  const closeHeapWindow = heapDir === undefined ? undefined : openHeapWindow(heapDir, pid);
  const result = await runLoad(running, { ...load, headers: row.headers() }, row.protocol);
  await sleep(SETTLE_MS);
  const after = { measured: treeCpuMicros(pid), service: cpuMicros(service.pid!), at: performance.now() };
  const machineBusy = cpuBusySince(machine);
  const countersAfter = row.gateway === undefined ? undefined : await gatewayCounters(row.gateway.admin);

  const measuredCpu = after.measured - before.measured;
  // Every process on the machine, ours and others: a busy measured CPU that the measured
  // process does not account for means something else ran there.
  const checks: string[] = [`machine ${machineBusy}`];
  if (countersBefore !== undefined && countersAfter !== undefined) {
    const delta = (name: string) => (countersAfter[name] ?? 0) - (countersBefore[name] ?? 0);
    checks.push(
      `cache hit ${delta('hit')} / miss ${delta('miss')}`,
      `redis failures ${delta('redisFailures')}`,
    );
    if (row.gateway?.auditLog !== undefined)
      checks.push(`audit records ${countLines(row.gateway.auditLog) - auditBefore}`);
  }
  if (closeHeapWindow !== undefined)
    checks.push(await closeHeapWindow(`${row.name} round ${round}`, result.responses));
  return {
    load: result,
    measuredCpuMicros: measuredCpu,
    serviceCpuMicros: after.service - before.service,
    // Near 100 % means this process was the bottleneck.
    busyPercent: (measuredCpu / ((after.at - before.at) * 1000)) * 100,
    peakRssMiB: treePeakRssMiB(pid),
    checks,
    probeStatus: check.status,
    cacheStatus: check.cacheStatus,
  };
}
