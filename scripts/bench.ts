/**
 * `npm run bench`: what the gateway costs, measured in one run and printed side by side.
 *
 * Starts the resource service (on its own PostgreSQL database), the gateway (on its own Redis
 * key prefix) and a bare http-proxy pass-through as the peer reference, pins them to CPUs
 * where the machine allows it, drives each row with autocannon in a child process, and
 * prints one table: direct service, gateway on cache miss, cache hit, 304 at the edge, and
 * http-proxy. CPU per request comes from /proc (Linux). Prints; asserts nothing.
 *
 * Environment: DATABASE_URL (admin connection; default postgres://postgres@127.0.0.1:5432/postgres),
 * REDIS_URL (default redis://127.0.0.1:6379), BENCH_DURATION (s per row, 6), BENCH_WARMUP (s, 2),
 * BENCH_CONNECTIONS (32), LOG_LEVEL (info: the gateway and the service log as in production),
 * BENCH_GATEWAY_NODE_ARGS (extra node flags for the gateway process, e.g. `--cpu-prof`).
 */
import { randomUUID } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { Agent, request } from 'undici';
import { generateSelfSigned } from '../shared/self-signed.ts';
import { loadAssertionKeys } from '../shared/assertion-keys.ts';
import { signAssertion } from '../shared/identity-assertion.ts';
import { loadOrCreateDevIssuer } from '../gateway/identity/dev-issuer.ts';
import {
  choosePlacement,
  cpuBusySince,
  cpuJiffies,
  cpuMicros,
  freePort,
  killChildren,
  moveToCpu,
  peakRssMiB,
  startNode,
  stdoutOf,
  waitUntil,
  type Placement,
} from './bench/children.ts';
import type { LoadOptions, LoadResult } from './bench/load.ts';
import { createBenchStores, StoreMissing, type BenchStores } from './bench/stores.ts';
import { printTable, type Measured } from './bench/report.ts';

const env = process.env;
const settings = {
  duration: Number(env['BENCH_DURATION'] ?? 6),
  warmup: Number(env['BENCH_WARMUP'] ?? 2),
  connections: Number(env['BENCH_CONNECTIONS'] ?? 32),
  logLevel: env['LOG_LEVEL'] ?? 'info',
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ROOT = new URL('..', import.meta.url).pathname;
const CUSTOMER = 'cus_bench';
const SCOPES = ['orders:read', 'orders:write'];
/** Lets queued work (audit records are written a turn after the response) land in the row. */
const SETTLE_MS = 500;

/** What one row sends, to which process, and what it must get back. */
interface Row {
  name: string;
  /** The process whose CPU and memory the row measures. */
  measured: 'service' | 'peer' | 'gateway';
  url: string;
  headers: () => Record<string, string>;
  expectedStatus: number;
  note: string;
}

interface Running {
  dir: string;
  caCert: string;
  placement: Placement;
  service: ChildProcess;
  gateway: ChildProcess;
  peer: ChildProcess;
  urls: { service: string; gateway: string; peer: string; admin: string };
  auditLog: string;
}

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
  idle: { line: string; busy: boolean },
): string[] {
  const model = cpus()[0]?.model ?? 'unknown CPU';
  const [one, five, fifteen] = loadavg().map((n) => n.toFixed(2));
  return [
    `machine   ${model}, ${cpus().length} CPUs, Linux ${release()}, load average ${one} ${five} ${fifteen}`,
    `before    ${idle.line} busy over the second before the run` +
      (idle.busy ? ': OTHER PROCESSES ARE RUNNING, the figures below are noisy' : ''),
    `software  node ${process.version}, ${stores.versions}, autocannon 9.0.0, http-proxy 1.18.1`,
    `placement ${placement.pinned ? 'pinned with taskset. ' : ''}${placement.reason}`,
    `load      ${settings.connections} keep-alive connections, ${settings.warmup} s warm-up (not counted) + ` +
      `${settings.duration} s measured per row; gateway and service log at ${settings.logLevel} to /dev/null`,
  ];
}

async function writeCertificate(dir: string): Promise<{ cert: string; certFile: string; keyFile: string }> {
  const pem = await generateSelfSigned();
  const certFile = join(dir, 'bench.crt');
  const keyFile = join(dir, 'bench.key');
  writeFileSync(certFile, pem.cert);
  writeFileSync(keyFile, pem.key, { mode: 0o600 });
  return { cert: pem.cert, certFile, keyFile };
}

function gatewayConfig(serviceUrl: string): object {
  return {
    listener: { tls: { certFile: 'bench.crt', keyFile: 'bench.key' } },
    routes: [{ prefix: '/v1', upstream: serviceUrl, auth: 'required', cache: true }],
    // Counted in Redis on every request, far above what a row can send: never refuses.
    rateLimits: { policies: [{ name: 'bench', key: 'principal', limit: 1_000_000_000, window: '60s' }] },
    // auth.jwt left at its defaults: no JWKS configured, so the data dir's development issuer
    // (the one that signs the bench's token) is trusted, and verified tokens are cached.
  };
}

/** Environment of a child: the caller's, minus anything that would point it elsewhere. */
function childEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  const base = { ...env };
  for (const name of Object.keys(base)) {
    if (name.startsWith('PORTICO_') || ['DATABASE_URL', 'REDIS_URL', 'GATEWAY_PORT'].includes(name))
      delete base[name];
  }
  return { ...base, LOG_LEVEL: settings.logLevel, ...overrides };
}

async function ok(url: string, dispatcher?: Agent): Promise<boolean> {
  const response = await request(url, dispatcher === undefined ? {} : { dispatcher });
  await response.body.dump();
  return response.statusCode === 200;
}

async function startProcesses(stores: BenchStores, placement: Placement, dir: string): Promise<Running> {
  const { cert, certFile, keyFile } = await writeCertificate(dir);
  const [servicePort, gatewayPort, adminPort, peerPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const urls = {
    service: `http://127.0.0.1:${servicePort}`,
    gateway: `https://127.0.0.1:${gatewayPort}`,
    peer: `https://127.0.0.1:${peerPort}`,
    admin: `http://127.0.0.1:${adminPort}`,
  };
  const auditLog = join(dir, 'audit.log');
  writeFileSync(join(dir, 'gateway.json'), JSON.stringify(gatewayConfig(urls.service)));

  // Gateway and service share the data dir: its assertion keys and development issuer.
  const service = startNode([join(ROOT, 'resource-service/main.ts')], {
    cpu: placement.others,
    logFile: join(dir, 'service.stderr'),
    env: childEnv({
      SERVICE_PORT: String(servicePort),
      SERVICE_HOST: '127.0.0.1',
      DATABASE_URL: stores.databaseUrl,
      PORTICO_DATA_DIR: dir,
    }),
  });
  await waitUntil('resource service', service, () => ok(`${urls.service}/healthz`));

  // BENCH_GATEWAY_NODE_ARGS (as `--cpu-prof --cpu-prof-dir=/tmp/prof`) go to the gateway only.
  const nodeArgs = (env['BENCH_GATEWAY_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== '');
  const gateway = startNode([...nodeArgs, join(ROOT, 'gateway/main.ts')], {
    cpu: placement.measured,
    logFile: join(dir, 'gateway.stderr'),
    env: childEnv({
      GATEWAY_PORT: String(gatewayPort),
      ADMIN_PORT: String(adminPort),
      PORTICO_CONFIG: join(dir, 'gateway.json'),
      PORTICO_DATA_DIR: dir,
      PORTICO_AUDIT_LOG: auditLog,
      REDIS_URL: stores.redisUrl,
      PORTICO_REDIS_PREFIX: stores.redisPrefix,
    }),
  });
  await waitUntil('gateway', gateway, () => ok(`${urls.admin}/readyz`));

  const peer = startNode(
    [join(ROOT, 'scripts/bench/http-proxy-peer.ts'), urls.service, String(peerPort), certFile, keyFile],
    {
      cpu: placement.measured,
      logFile: join(dir, 'peer.stderr'),
    },
  );
  const tls = new Agent({ connect: { ca: cert } });
  // Any answer means it listens (the service answers 401 without an assertion).
  await waitUntil('http-proxy peer', peer, async () => {
    const response = await request(`${urls.peer}/v1/orders`, { dispatcher: tls });
    await response.body.dump();
    return true;
  });
  await tls.close();
  return { dir, caCert: cert, placement, service, gateway, peer, urls, auditLog };
}

/** Creates an order through the gateway, as a client would; returns its id. */
async function createOrder(running: Running, token: string, tls: Agent): Promise<string> {
  const response = await request(`${running.urls.gateway}/v1/orders`, {
    method: 'POST',
    dispatcher: tls,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'idempotency-key': randomUUID(),
    },
    body: JSON.stringify({ items: [{ sku: 'SKU-1', quantity: 2, unit_price: 1250 }], currency: 'EUR' }),
  });
  const body = (await response.body.json()) as { id?: string };
  if (response.statusCode !== 201 || body.id === undefined)
    throw new Error(`creating an order answered ${response.statusCode}: ${JSON.stringify(body)}`);
  return body.id;
}

/** One request with the certificate checked against the bench CA: status and Cache-Status. */
async function probe(
  row: Row,
  tls: Agent,
): Promise<{ status: number; cacheStatus: string | undefined; etag: string | undefined }> {
  const response = await request(row.url, { headers: row.headers(), dispatcher: tls });
  await response.body.dump();
  const header = (name: string) => {
    const value = response.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  return { status: response.statusCode, cacheStatus: header('cache-status'), etag: header('etag') };
}

async function runLoad(placement: Placement, options: LoadOptions): Promise<LoadResult> {
  const child = startNode([join(ROOT, 'scripts/bench/load.ts'), JSON.stringify(options)], {
    cpu: placement.others,
    captureStdout: true,
  });
  return JSON.parse(await stdoutOf(child)) as LoadResult;
}

/** Reads the gateway's own counters, to show that a row was what it claims to be. */
async function gatewayCounters(adminUrl: string): Promise<Record<string, number>> {
  const response = await request(`${adminUrl}/metrics`);
  const text = await response.body.text();
  const read = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? Number.NaN);
  return {
    hit: read(/^portico_cache_requests_total\{result="hit"\} (\S+)$/m),
    miss: read(/^portico_cache_requests_total\{result="miss"\} (\S+)$/m),
    revalidated: read(/^portico_cache_requests_total\{result="revalidated"\} (\S+)$/m),
    redisFailures: read(/^portico_ratelimit_store_failures (\S+)$/m),
  };
}

function countLines(file: string): number {
  const fd = openSync(file, 'r');
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

async function measureRow(running: Running, row: Row, tls: Agent): Promise<Measured> {
  const { placement, service } = running;
  // The process under test gets the measured CPU to itself; the service moves aside otherwise.
  moveToCpu(service.pid!, row.measured === 'service' ? placement.measured : placement.others);
  const pid = { service: service.pid!, peer: running.peer.pid!, gateway: running.gateway.pid! }[row.measured];
  const check = await probe(row, tls);
  const load: LoadOptions = {
    url: row.url,
    connections: settings.connections,
    duration: settings.duration,
    headers: row.headers(),
  };
  if (settings.warmup > 0) await runLoad(placement, { ...load, duration: settings.warmup });
  await sleep(SETTLE_MS);

  const isGateway = row.measured === 'gateway';
  const countersBefore = isGateway ? await gatewayCounters(running.urls.admin) : undefined;
  const auditBefore = isGateway ? countLines(running.auditLog) : 0;
  const machine = cpuJiffies();
  const before = { measured: cpuMicros(pid), service: cpuMicros(service.pid!), at: performance.now() };
  const result = await runLoad(placement, { ...load, headers: row.headers() });
  await sleep(SETTLE_MS);
  const after = { measured: cpuMicros(pid), service: cpuMicros(service.pid!), at: performance.now() };
  const machineBusy = cpuBusySince(machine);
  const countersAfter = isGateway ? await gatewayCounters(running.urls.admin) : undefined;

  const measuredCpu = after.measured - before.measured;
  // Every process on the machine, ours and others: a busy measured CPU that the measured
  // process does not account for means something else ran there.
  const checks: string[] = [`machine ${machineBusy}`];
  if (check.status !== row.expectedStatus)
    checks.push(`probe answered ${check.status}, expected ${row.expectedStatus}`);
  if (countersBefore !== undefined && countersAfter !== undefined) {
    const delta = (name: string) => (countersAfter[name] ?? 0) - (countersBefore[name] ?? 0);
    checks.push(
      `cache hit ${delta('hit')} / miss ${delta('miss')} / revalidated ${delta('revalidated')}`,
      `audit records ${countLines(running.auditLog) - auditBefore}`,
      `redis failures ${delta('redisFailures')}`,
    );
  }
  return {
    name: row.name,
    measured: row.measured,
    load: result,
    expectedStatus: row.expectedStatus,
    measuredCpuMicros: measuredCpu,
    serviceCpuMicros: after.service - before.service,
    // CPU time over wall time of the window: near 100 % means this process was the bottleneck.
    busyPercent: (measuredCpu / ((after.at - before.at) * 1000)) * 100,
    peakRssMiB: peakRssMiB(pid),
    note: row.note,
    checks,
    cacheStatus: check.cacheStatus,
  };
}

async function defineRows(running: Running, tls: Agent): Promise<Row[]> {
  const issuer = loadOrCreateDevIssuer(running.dir);
  const token = await issuer.sign(
    { sub: 'bench-user', client_id: 'bench', customer_id: CUSTOMER, scope: SCOPES.join(' ') },
    3600,
  );
  const bearer = { authorization: `Bearer ${token}` };
  const cachedOrder = await createOrder(running, token, tls);
  const missOrder = await createOrder(running, token, tls);
  const path = `/v1/orders/${cachedOrder}`;
  const [key] = loadAssertionKeys({}, running.dir);
  // What the gateway would add: the service refuses any request without it. Minted per row
  // (it lives at most 120 s), for the one method and target the row sends.
  const assertion = () => ({
    ...bearer,
    'portico-identity': signAssertion(
      key!,
      { subject: 'bench-user', customerId: CUSTOMER, scopes: SCOPES, authMethod: 'jwt' },
      { method: 'GET', target: path, requestId: 'bench' },
      { lifetimeSeconds: 120 },
    ),
  });
  // The order's current ETag, from the service itself, so that the gateway's cache stays
  // empty until the cache-hit row: its probe is the read that stores the entry, and the hit
  // and 304 rows that follow run well within the entry's 30 s freshness.
  const current = await probe(
    {
      name: 'etag',
      measured: 'service',
      url: `${running.urls.service}${path}`,
      headers: assertion,
      expectedStatus: 200,
      note: '',
    },
    tls,
  );
  if (current.status !== 200 || current.etag === undefined)
    throw new Error(`GET ${path} from the service answered ${current.status} without an ETag`);
  const etag = current.etag;
  return [
    {
      name: 'direct service',
      measured: 'service',
      url: `${running.urls.service}${path}`,
      headers: assertion,
      expectedStatus: 200,
      note: 'plain HTTP straight to the service, client sends the signed assertion',
    },
    {
      name: 'gateway, cache miss',
      measured: 'gateway',
      url: `${running.urls.gateway}/v1/orders/${missOrder}`,
      headers: () => ({ ...bearer, 'cache-control': 'no-store' }),
      expectedStatus: 200,
      note: 'full pipeline; request no-store: looked up, never stored',
    },
    {
      name: 'gateway, cache hit',
      measured: 'gateway',
      url: `${running.urls.gateway}${path}`,
      headers: () => bearer,
      expectedStatus: 200,
      note: 'full pipeline, answered from the cache',
    },
    {
      name: 'gateway, 304 at edge',
      measured: 'gateway',
      url: `${running.urls.gateway}${path}`,
      headers: () => ({ ...bearer, 'if-none-match': etag }),
      expectedStatus: 304,
      note: 'If-None-Match = current ETag, fresh entry: 304, no upstream call',
    },
    {
      name: 'http-proxy 1.18.1 (peer)',
      measured: 'peer',
      url: `${running.urls.peer}${path}`,
      headers: assertion,
      expectedStatus: 200,
      note: 'HTTPS + keep-alive pass-through: no auth/limit/cache/audit/log',
    },
  ];
}

/** The end of each child's stderr, for a run that failed. */
function printChildLogs(dir: string): void {
  for (const name of ['service', 'gateway', 'peer']) {
    const file = join(dir, `${name}.stderr`);
    const log = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
    if (log !== '') console.error(`--- ${name} stderr (last 2000 characters) ---\n${log.slice(-2000)}`);
  }
}

/** Removes everything the run created; every step runs even if an earlier one fails. */
async function cleanUp(stores: BenchStores | undefined, dir: string | undefined): Promise<void> {
  await killChildren();
  await stores?.remove().catch((error: unknown) => console.error(`bench: cleanup: ${String(error)}`));
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
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
    const idle = await idleCheck();
    const placement = choosePlacement();
    // The driver is idle while autocannon runs, but keep it off the measured CPU all the same.
    moveToCpu(process.pid, placement.others);
    dir = mkdtempSync(join(tmpdir(), 'portico-bench-'));
    const running = await startProcesses(stores, placement, dir);
    const tls = new Agent({ connect: { ca: running.caCert } });
    const rows = await defineRows(running, tls);
    for (const line of machineFacts(placement, stores, idle)) console.log(line);
    console.log('');
    const measured: Measured[] = [];
    for (const row of rows) {
      process.stderr.write(`bench: ${row.name} ...\n`);
      measured.push(await measureRow(running, row, tls));
    }
    await tls.close();
    printTable(measured);
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
