/**
 * `npm run soak [-- --minutes N]`: a bounded run (10 minutes unless told) of mixed traffic
 * through the whole stack as production runs it, watching for what only time shows: memory,
 * heap or file descriptors that grow, and answers that should not happen.
 *
 * Starts the resource service and the gateway as separate processes on a database, a Redis
 * key prefix and a data dir of the run's own (all removed at the end, however it ends), sends
 * about 185 requests/s of reads, lists, conditional GETs, idempotent creates and replays,
 * patches, payments, a customer over its rate limit and bad credentials, and prints a table
 * row a minute, the totals, and a verdict that is also the exit code: 0 pass, 1 fail,
 * 2 bad arguments or no PostgreSQL/Redis, 130 interrupted.
 *
 * Environment: DATABASE_URL (admin connection; default postgres://postgres@127.0.0.1:5432/postgres),
 * REDIS_URL (default redis://127.0.0.1:6379), LOG_LEVEL of the two processes (info, as in
 * production; their logs are read for warnings and errors, nothing is kept on disk).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { Agent } from 'undici';
import { killChildren, peakRssMiB } from './bench/children.ts';
import { buildProduct } from './bench/processes.ts';
import { createBenchStores, StoreMissing, type BenchStores } from './bench/stores.ts';
import { answerHelp } from '../scripts/cli-args.ts';
import { createAgent, SoakClient } from './soak/client.ts';
import { badCredentials, mintCustomers, type Customer } from './soak/fleet.ts';
import {
  formatHeapTotals,
  formatRow,
  formatTotals,
  minuteRow,
  PEAK_RSS_LIMIT_MIB,
  tableHeader,
  verdict,
  type MinuteRow,
} from './soak/report.ts';
import { takeSample, type Sample } from './soak/sampler.ts';
import { AUTH_FAILURE_LIMIT, childLogTails, CUSTOMER_LIMIT, startStack, type Stack } from './soak/stack.ts';
import { Tally } from './soak/tally.ts';
import { createOrder, LANES, runTraffic, type TrafficDeps } from './soak/traffic.ts';

const USAGE = 'usage: npm run soak [-- --minutes N]   (N: whole minutes from 1 to 1440; default 10)';
const SAMPLE_EVERY_MS = 5000;
const CUSTOMERS = 12;
/** Orders each customer starts with: never-changed ones (for 304s) and changeable ones. */
const SEED = { stable: 4, changeable: 6 };
/** A second source address on the loopback network, for the client with bad credentials. */
const STRANGER_ADDRESS = '127.0.0.66';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** What the run created, for the cleanup: filled in as it is created. */
interface Run {
  stores?: BenchStores;
  dir?: string;
  strangerDir?: string;
  redis?: Redis;
  agents: Agent[];
  tally?: Tally;
  stopping: boolean;
}

/** The run's length in minutes, or why the arguments are wrong. */
function parseMinutes(argv: string[]): { minutes: number } | { error: string } {
  if (argv.length === 0) return { minutes: 10 };
  const [first = '', ...rest] = argv;
  const [flag, inline] = first.includes('=') ? first.split('=', 2) : [first, undefined];
  if (flag !== '--minutes') return { error: `unknown argument ${first}` };
  const value = inline ?? rest.shift();
  if (value === undefined) return { error: '--minutes needs a value' };
  if (rest.length > 0) return { error: `unexpected argument ${rest[0]}` };
  const minutes = Number(value);
  if (!/^[1-9][0-9]*$/.test(value) || minutes > 1440)
    return { error: `--minutes takes whole minutes from 1 to 1440, got ${JSON.stringify(value)}` };
  return { minutes };
}

/** Removes everything the run created; every step runs even if an earlier one fails. */
async function cleanUp(run: Run): Promise<void> {
  await killChildren();
  await Promise.all(run.agents.map((agent) => agent.close().catch(() => {})));
  run.redis?.disconnect();
  await run.stores?.remove().catch((error: unknown) => console.error(`soak: cleanup: ${String(error)}`));
  for (const dir of [run.dir, run.strangerDir])
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}

/** Connects the client the sampler asks INFO and CLIENT LIST with (no key is touched). */
async function connectSamplerRedis(url: string): Promise<Redis> {
  const redis = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  redis.on('error', () => {}); // a failed sample shows as n/a in the table
  await redis.connect();
  return redis;
}

/** Customers with their first orders, created through the gateway and checked like any create. */
async function seed(stack: Stack, run: Run, minutes: number): Promise<TrafficDeps> {
  const dir = run.dir!;
  const ttl = minutes * 60 + 600;
  const ids = Array.from({ length: CUSTOMERS }, (_, i) => `soak-c${String(i + 1).padStart(2, '0')}`);
  const customers = await mintCustomers(dir, ids, ttl);
  const [hammer] = await mintCustomers(dir, ['soak-hammer'], ttl);
  const agent = createAgent(stack.caCert);
  const strangerAgent = createAgent(stack.caCert, STRANGER_ADDRESS);
  run.agents.push(agent, strangerAgent);
  const seedTally = new Tally();
  const deps: TrafficDeps = {
    client: new SoakClient(stack.urls.gateway, agent, seedTally),
    strangerClient: new SoakClient(stack.urls.gateway, strangerAgent, seedTally),
    customers,
    hammer: hammer!,
    badCredentials: await badCredentials(run.strangerDir!, dir),
  };
  const seedOne = async (customer: Customer) => {
    for (let i = 0; i < SEED.stable + SEED.changeable; i++) {
      const order = await createOrder(deps, customer, { stable: i < SEED.stable, replayChance: 0 });
      if (order === undefined)
        throw new Error(`seeding ${customer.id}: ${formatTotals(seedTally).join('\n')}`);
    }
  };
  await Promise.all(customers.map(seedOne));
  const tally = new Tally();
  run.tally = tally;
  return {
    ...deps,
    client: new SoakClient(stack.urls.gateway, agent, tally),
    strangerClient: new SoakClient(stack.urls.gateway, strangerAgent, tally),
  };
}

function assertRunning(stack: Stack): void {
  for (const [name, child] of [
    ['gateway', stack.gateway],
    ['resource service', stack.service],
  ] as const) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the ${name} exited (${child.signalCode ?? child.exitCode}) during the run`);
  }
}

/**
 * Samples every few seconds and prints a row at the end of each minute. The last minute
 * ends when the traffic has ended, so the requests still in flight at the deadline count.
 */
async function monitor(
  stack: Stack,
  run: Run,
  sampled: { redis: Redis; tally: Tally },
  minutes: number,
  startedAt: number,
  traffic: Promise<void>,
): Promise<MinuteRow[]> {
  const sample = async (): Promise<Sample> => {
    assertRunning(stack);
    return takeSample({
      gatewayPid: stack.gateway.pid!,
      servicePid: stack.service.pid!,
      memoryFiles: stack.memoryFiles,
      redis: sampled.redis,
    });
  };
  const rows: MinuteRow[] = [];
  for (let minute = 1; minute <= minutes && !run.stopping; minute++) {
    const end = startedAt + minute * 60_000;
    const samples: Sample[] = [];
    while (performance.now() < end - 250 && !run.stopping) {
      await sleep(Math.min(SAMPLE_EVERY_MS, end - performance.now()));
      samples.push(await sample());
    }
    if (minute === minutes) await traffic;
    const row = minuteRow(minute, sampled.tally.takeMinute(), samples, performance.now());
    rows.push(row);
    console.log(formatRow(row));
  }
  return rows;
}

function describeRun(stack: Stack, stores: BenchStores, minutes: number): string[] {
  const workers = LANES.reduce((sum, lane) => sum + lane.workers, 0);
  const rate = LANES.reduce((sum, lane) => sum + lane.workers * lane.perSecond, 0);
  return [
    `soak      ${minutes} minute(s); ${workers} workers pacing at most ${rate} steps/s ` +
      `(${LANES.map((l) => `${l.name} ${l.workers * l.perSecond}`).join(', ')})`,
    `stack     gateway pid ${stack.gateway.pid} ${stack.urls.gateway}, service pid ${stack.service.pid} ` +
      `${stack.urls.service}; node ${process.version}; logs at ${stack.logLevel}`,
    `stores    ${stores.versions}; database ${new URL(stores.databaseUrl).pathname.slice(1)} and Redis ` +
      `prefix ${stores.redisPrefix} of this run only`,
    `limits    policy customer ${CUSTOMER_LIMIT.limit}/${CUSTOMER_LIMIT.window} (the hammer sends more); ` +
      `failed authentications ${AUTH_FAILURE_LIMIT.limit}/${AUTH_FAILURE_LIMIT.window} per address ` +
      `(bad credentials come from ${STRANGER_ADDRESS})`,
    '',
  ];
}

function printLogs(stack: Stack): void {
  for (const [name, watch] of Object.entries(stack.logs)) {
    console.log(`${name} log: ${watch.warn} warnings, ${watch.error} errors (start-up included)`);
    for (const entry of watch.latest) console.log(`  ${entry}`);
  }
}

async function soak(run: Run, minutes: number): Promise<number> {
  buildProduct('soak');
  const stores = await createBenchStores(process.env, 'soak');
  run.stores = stores;
  run.dir = mkdtempSync(join(tmpdir(), 'portico-soak-'));
  run.strangerDir = mkdtempSync(join(tmpdir(), 'portico-soak-stranger-'));
  const stack = await startStack(stores, run.dir, process.env['LOG_LEVEL'] ?? 'info');
  try {
    const redis = await connectSamplerRedis(stores.redisUrl);
    run.redis = redis;
    const deps = await seed(stack, run, minutes);
    const tally = run.tally!;
    for (const line of describeRun(stack, stores, minutes)) console.log(line);
    console.log(tableHeader());
    const startedAt = performance.now();
    tally.takeMinute(startedAt);
    const traffic = runTraffic(deps, startedAt + minutes * 60_000, () => run.stopping);
    const rows = await monitor(stack, run, { redis, tally }, minutes, startedAt, traffic).finally(() => {
      run.stopping = true;
    });
    await traffic;
    for (const line of formatHeapTotals(rows)) console.log(line);
    console.log('');
    for (const line of formatTotals(tally)) console.log(line);
    console.log('');
    printLogs(stack);
    console.log('');
    // VmHWM only grows: read once the traffic is over, it holds the whole run's peak.
    const result = verdict(rows, tally, peakRssMiB(stack.gateway.pid!));
    for (const line of result.lines) console.log(line);
    return result.pass ? 0 : 1;
  } catch (error) {
    printLogs(stack);
    throw error;
  }
}

async function main(): Promise<number> {
  answerHelp(`${USAGE}

A bounded run of mixed traffic (about 185 requests/s) through the service and the gateway as
production runs them, on a database, Redis prefix and data dir of its own (removed at the end):
a row a minute (RSS, peak RSS, heap, file descriptors, errors), totals and a verdict (the
gateway's peak RSS under ${PEAK_RSS_LIMIT_MIB} MiB among its checks). Exit 0 pass, 1 fail,
2 bad arguments or no PostgreSQL/Redis, 130 interrupted.

Environment: DATABASE_URL (admin connection, default postgres://postgres@127.0.0.1:5432/postgres),
REDIS_URL (default redis://127.0.0.1:6379), LOG_LEVEL of the two processes (info).`);
  const parsed = parseMinutes(process.argv.slice(2));
  if ('error' in parsed) {
    console.error(`soak: ${parsed.error}\n${USAGE}`);
    return 2;
  }
  const { minutes } = parsed;
  const run: Run = { agents: [], stopping: false };
  // Ctrl-C or a kill: what was counted so far, the same cleanup as a normal end, then 130.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      run.stopping = true;
      console.error(
        `\nsoak: ${signal}, stopping the processes and removing the run's database, keys and files`,
      );
      run.tally?.close();
      if (run.tally !== undefined) for (const line of formatTotals(run.tally)) console.error(line);
      void cleanUp(run).finally(() => process.exit(130));
    });
  }
  try {
    return await soak(run, minutes);
  } catch (error) {
    if (error instanceof StoreMissing) {
      console.error(`soak: ${error.message}`);
      return 2;
    }
    console.error(`soak: failed: ${(error as Error).stack ?? String(error)}`);
    if (run.dir !== undefined) for (const tail of childLogTails(run.dir)) console.error(tail);
    return 1;
  } finally {
    await cleanUp(run);
  }
}

process.exitCode = await main();
