/**
 * `npm run bench`: what the gateway costs, measured in one run and printed side by side.
 *
 * Builds, then starts the resource service (on its own PostgreSQL database), the gateway as
 * shipped (the built output with the `gateway` npm script's node flags, on its own Redis key prefix), an http-proxy pass-through as the peer reference, the cost ladder
 * (one gateway per rung on a static upstream, with its own peer) and the field on that upstream
 * (nginx, installed with apt-get when missing; a fastify-assembled gateway; Node's floors); pins them to CPUs where the
 * machine allows it; drives every row with autocannon in a child process, in rounds with the
 * rows interleaved; prints medians with their ranges. CPU per request comes from /proc (Linux).
 * After the rounds, the capacity model's figures: Redis commands per request for each path and
 * memory per held-open connection (bench/capacity.ts).
 * Prints; asserts nothing.
 *
 * Environment: DATABASE_URL (admin connection; default postgres://postgres@127.0.0.1:5432/postgres),
 * REDIS_URL (default redis://127.0.0.1:6379), BENCH_ROUNDS (3), BENCH_DURATION (s per row and
 * round, 5), BENCH_WARMUP (s before each row's first round, 2; 1 in later rounds),
 * BENCH_CONNECTIONS (32), BENCH_ROWS (comma-separated parts of row names: only those rows),
 * LOG_LEVEL (info: the gateway and the service log as in production),
 * BENCH_GATEWAY_NODE_ARGS (extra node flags for the gateways of the chosen rows, e.g.
 * `--cpu-prof`), BENCH_BASELINE
 * (the root of another checkout, built: its gateway gets a cache-miss and a cache-hit row of its
 * own, interleaved with this one's, so a change is measured before and after in one run),
 * BENCH_MEMORY_SAMPLER (a directory: each gateway writes its memory at its RSS peak there),
 * BENCH_HEAP_SAMPLE (a directory: a heap profile of what the gateway allocated per gateway row
 * and round, and KiB allocated per request among the row's checks; measure/heap-summary.ts),
 * BENCH_NO_INSTALL (set: never apt-get install nginx; its rows are printed as missing).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import {
  choosePlacement,
  cpuBusySince,
  cpuJiffies,
  killChildren,
  moveToCpu,
  type Placement,
} from './bench/children.ts';
import { measureCapacity } from './bench/capacity.ts';
import { measureRow, type Sample } from './bench/measure.ts';
import { buildProduct, childLogNames, startProcesses, type Settings } from './bench/processes.ts';
import { printReport } from './bench/report.ts';
import { printField } from './bench/report-field.ts';
import { defineRows } from './bench/rows.ts';
import { rowChosen } from './bench/row-choice.ts';
import { createBenchStores, StoreMissing, type BenchStores } from './bench/stores.ts';
import { answerHelp, usageError } from '../scripts/cli-args.ts';

const USAGE = 'usage: npm run bench   (settings by environment: BENCH_ROUNDS, BENCH_ROWS, ...)';
answerHelp(`${USAGE}

Builds, starts the service, the shipped gateway, an http-proxy peer, the cost ladder and the
field (nginx, installed with apt-get when missing; a fastify-assembled gateway; Node's floors), drives
every row with autocannon in interleaved rounds and prints medians with their ranges (req/s,
latency, CPU-µs per request from /proc). Asserts nothing. Uses its own PostgreSQL database and
Redis prefix, removed at the end.

Environment: DATABASE_URL (admin connection, default postgres://postgres@127.0.0.1:5432/postgres),
REDIS_URL (default redis://127.0.0.1:6379), BENCH_ROUNDS (3), BENCH_DURATION (s per row and
round, 5), BENCH_WARMUP (2), BENCH_CONNECTIONS (32), BENCH_ROWS (comma-separated parts of row
names: only those rows), LOG_LEVEL (info), BENCH_GATEWAY_NODE_ARGS (extra node flags for the
gateways of the chosen rows),
BENCH_BASELINE (root of another built checkout: cache-miss and cache-hit rows through its gateway),
BENCH_MEMORY_SAMPLER (a directory: each gateway writes <pid>.json there, its memory by where it is
at its RSS peak; measure/bench/memory-sampler.ts),
BENCH_HEAP_SAMPLE (a directory: what each gateway row allocated, as a heap profile per round and
KiB per request among its checks; node measure/heap-summary.ts FILE --requests N tells where),
BENCH_NO_INSTALL (set: never apt-get install nginx for the field rows; they print as missing).
A short plumbing check: BENCH_ROUNDS=1 BENCH_DURATION=2 BENCH_WARMUP=0 npm run bench.`);
if (process.argv.length > 2) usageError('bench', USAGE, `unexpected argument ${process.argv[2]}`);

const env = process.env;
const settings: Settings = {
  rounds: Math.max(1, Number(env['BENCH_ROUNDS'] ?? 3)),
  duration: Number(env['BENCH_DURATION'] ?? 5),
  warmup: Number(env['BENCH_WARMUP'] ?? 2),
  connections: Number(env['BENCH_CONNECTIONS'] ?? 32),
  logLevel: env['LOG_LEVEL'] ?? 'info',
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How busy each CPU was over one second, before anything of the bench runs. */
async function idleCheck(): Promise<{ line: string; busy: boolean }> {
  const before = cpuJiffies();
  await sleep(1000);
  const line = cpuBusySince(before);
  return { line, busy: [...line.matchAll(/(\d+)%/g)].some((match) => Number(match[1]) > 20) };
}

function machineFacts(
  placement: Placement,
  stores: BenchStores,
  fieldVersions: string,
  idle: { line: string; busy: boolean },
): string[] {
  const model = cpus()[0]?.model ?? 'unknown CPU';
  const [one, five, fifteen] = loadavg().map((n) => n.toFixed(2));
  return [
    `machine   ${model}, ${cpus().length} CPUs, Linux ${release()}, load average ${one} ${five} ${fifteen}`,
    `before    ${idle.line} busy over the second before the run` +
      (idle.busy ? ': OTHER PROCESSES ARE RUNNING, the figures below are noisy' : ''),
    `software  node ${process.version}, ${stores.versions}, autocannon 9.0.0, http-proxy 1.18.1, ${fieldVersions}`,
    `placement ${placement.pinned ? 'pinned with taskset. ' : ''}${placement.reason}`,
    `load      ${settings.rounds} rounds, rows interleaved; per row and round ${settings.connections} keep-alive ` +
      `connections, ${settings.duration} s measured after a warm-up (${settings.warmup} s in round 1, ` +
      `${Math.min(1, settings.warmup)} s later); gateway and service log at ${settings.logLevel} to /dev/null`,
  ];
}

/** The end of each child's stderr, for a run that failed. */
function printChildLogs(dir: string): void {
  for (const name of childLogNames()) {
    const file = join(dir, `${name}.stderr`);
    const log = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
    if (log !== '') console.error(`--- ${name} stderr (last 2000 characters) ---\n${log.slice(-2000)}`);
  }
}

/** Removes everything the run created; every step runs even if an earlier one fails. */
async function cleanUp(stores: BenchStores | undefined, dir: string | undefined): Promise<void> {
  // A gateway run with --cpu-prof writes its profile as it exits: seconds for a busy one.
  await killChildren((env['BENCH_GATEWAY_NODE_ARGS'] ?? '').includes('-prof') ? 60_000 : 3000);
  await stores?.remove().catch((error: unknown) => console.error(`bench: cleanup: ${String(error)}`));
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}

async function run(stores: BenchStores, dir: string): Promise<void> {
  buildProduct('bench');
  const idle = await idleCheck();
  const placement = choosePlacement();
  // The driver is idle while autocannon runs, but keep it off the measured CPU all the same.
  moveToCpu(process.pid, placement.others);
  const running = await startProcesses(stores, placement, dir, settings);
  const tls = new Agent({ connect: { ca: running.caCert } });
  const rows = (await defineRows(running, tls)).filter((row) => rowChosen(row.name, env));
  const missing = running.field.missing.filter((peer) => rowChosen(peer.name, env));
  for (const line of machineFacts(placement, stores, running.field.versions, idle)) console.log(line);
  console.log('');
  const samples = new Map(rows.map((row) => [row, [] as Sample[]]));
  for (let round = 1; round <= settings.rounds; round++) {
    for (const row of rows) {
      process.stderr.write(`bench: round ${round}/${settings.rounds}: ${row.name} ...\n`);
      const warmup = round === 1 ? settings.warmup : Math.min(1, settings.warmup);
      samples.get(row)!.push(await measureRow(running, row, tls, settings, warmup, round));
    }
  }
  await tls.close();
  const results = rows.map((row) => ({ row, samples: samples.get(row)! }));
  printReport(results);
  printField(results, missing);
  const capacity = await measureCapacity(running, rows, stores.redisUrl, settings);
  console.log('\nCapacity (measure/bench/capacity.ts, after the rounds)');
  for (const line of capacity) console.log(`  ${line}`);
}

async function main(): Promise<number> {
  let stores: BenchStores | undefined;
  let dir: string | undefined;
  let interrupted = false;
  // Ctrl-C or a kill: the same cleanup as a normal end, then exit as interrupted.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      interrupted = true;
      console.error(`\nbench: ${signal}, stopping children and removing the bench database and keys`);
      void cleanUp(stores, dir).finally(() => process.exit(130));
    });
  }
  try {
    stores = await createBenchStores(env);
    dir = mkdtempSync(join(tmpdir(), 'portico-bench-'));
    await run(stores, dir);
    return 0;
  } catch (error) {
    if (interrupted) return 130; // children killed under a running row: not a failure to report
    if (error instanceof StoreMissing) {
      console.error(`bench: ${error.message}`);
      return 2;
    }
    console.error(`bench: failed: ${(error as Error).stack ?? String(error)}`);
    if (dir !== undefined) printChildLogs(dir);
    return 1;
  } finally {
    await cleanUp(stores, dir);
  }
}

process.exitCode = await main();
