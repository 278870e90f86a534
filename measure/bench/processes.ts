/**
 * Everything `npm run bench` measures, started as child processes: the resource service on
 * its own database, the gateway as production runs it (gateway/main.ts, its own Redis key
 * prefix), the http-proxy peer in front of the service, and for the cost ladder a static
 * upstream with its own http-proxy peer and one gateway per rung (ladder.ts), and the field
 * on the same static upstream: nginx, a fastify-assembled gateway, Node's floors (field.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'undici';
import { ensureDevPki, type DevPkiFiles } from '../../shared/dev-pki.ts';
import { generateSelfSigned } from '../../shared/self-signed.ts';
import { childEnv, freePort, startNode, waitUntil, type Placement } from './children.ts';
import { heapSampleDir } from './heap-window.ts';
import { bundledEntry, plainEntry } from './plain-entry.ts';
import type { LadderGatewayOptions } from './ladder-gateway.ts';
import { RUNGS } from './ladder.ts';
import { BASELINE_ROWS, MAIN_GATEWAY_ROWS, REPLICAS_ROW, rowChosen, workersRowName } from './row-choice.ts';
import type { BenchStores } from './stores.ts';
import { startField, type Field } from './field.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

export interface Settings {
  duration: number;
  warmup: number;
  connections: number;
  rounds: number;
  logLevel: string;
}

/** A gateway the bench measures, with where to read its counters and audit records. */
export interface GatewayProcess {
  process: ChildProcess;
  url: string;
  admin: string;
  /** Absent when the gateway writes no audit log. */
  auditLog?: string;
}

export interface Running {
  dir: string;
  caCert: string;
  placement: Placement;
  service: ChildProcess;
  serviceUrl: string;
  gateway: GatewayProcess;
  /** The same gateway with /v1 balanced over two service processes (`upstreams`). */
  replicas: GatewayProcess;
  peer: { process: ChildProcess; url: string };
  staticPeer: { process: ChildProcess; url: string };
  ladder: GatewayProcess[];
  /** The shipped gateway on the static upstream with GATEWAY_WORKERS 1 and 2. */
  workers: GatewayProcess[];
  /** The main gateway as another checkout built it (BENCH_BASELINE), for a before/after in one run. */
  baseline?: GatewayProcess;
  /** nginx, the fastify-assembled gateway and Node's floors on the static upstream (field.ts). */
  field: Field;
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
  // The full pipeline, as shipped; the workers rows send it to the static upstream.
  return {
    listener: { tls: { certFile: 'bench.crt', keyFile: 'bench.key' } },
    routes: [{ prefix: '/v1', upstream: serviceUrl, auth: 'required', cache: true }],
    // Counted in Redis on every request, far above what a row can send: never refuses.
    rateLimits: { policies: [{ name: 'bench', key: 'principal', limit: 1_000_000_000, window: '60s' }] },
    // auth.jwt left at its defaults: no JWKS configured, so the data dir's development issuer
    // (the one that signs the bench's token) is trusted, and verified tokens are cached.
  };
}

/** Whether something accepts TCP connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function answers(url: string, dispatcher?: Agent, status = 200): Promise<boolean> {
  const response = await request(url, dispatcher === undefined ? {} : { dispatcher });
  await response.body.dump();
  return status === 0 || response.statusCode === status;
}

/**
 * The extra node flags for a gateway whose rows are `rows`: with BENCH_MEMORY_SAMPLER=DIR the
 * memory sampler preloaded as plain JavaScript (memory-sampler.ts); and when BENCH_ROWS chose
 * one of its rows (row-choice.ts says why not the others), BENCH_GATEWAY_NODE_ARGS
 * (`--cpu-prof`, say) and with BENCH_HEAP_SAMPLE=DIR the heap sampler (heap-sampler.ts).
 */
export function gatewayNodeArgs(rows: readonly string[], env: NodeJS.ProcessEnv = process.env): string[] {
  const sampler = env['BENCH_MEMORY_SAMPLER']
    ? ['--import', plainEntry('measure/bench/memory-sampler.ts')]
    : [];
  if (!rows.some((row) => rowChosen(row, env))) return sampler;
  const heap =
    heapSampleDir(env) === undefined ? [] : ['--import', plainEntry('measure/bench/heap-sampler.ts')];
  return [
    ...sampler,
    ...heap,
    ...(env['BENCH_GATEWAY_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== ''),
  ];
}

/**
 * The gateway as a checkout ships it: its built output, with the node flags of its own `gateway`
 * npm script (`node [flags] dist/gateway/main.js`), so the bench measures the command production
 * runs, and a baseline checkout (BENCH_BASELINE) runs with the flags it shipped with.
 */
export function shippedGatewayCommand(root = ROOT): string[] {
  return shippedCommand('gateway', root);
}

/** The resource service as shipped: its built output with its `service` npm script's node flags. */
export function shippedServiceCommand(root = ROOT): string[] {
  return shippedCommand('service', root);
}

function shippedCommand(script: 'gateway' | 'service', root: string): string[] {
  const { flags, entry } = shippedScript(script, root);
  return [...flags, join(root, entry)];
}

/**
 * `npm run build`: the bench's gateway rows and the soak run the built output, as production
 * does. `who` names the command in its progress line.
 */
export function buildProduct(who: string, root = ROOT): void {
  process.stderr.write(`${who}: npm run build ...\n`);
  execFileSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: ['ignore', 2, 2] });
}

/** The node flags and entry point of the npm script `script` of the checkout at `root`. */
function shippedScript(script: 'gateway' | 'service', root: string): { flags: string[]; entry: string } {
  const scripts = (
    JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  ).scripts;
  const [node, ...args] = (scripts[script] ?? '').split(' ').filter((part) => part !== '');
  const entry = args.at(-1);
  if (node !== 'node' || entry === undefined || !entry.endsWith('.js'))
    throw new Error(`the ${script} npm script is not "node [flags] FILE.js": ${scripts[script]}`);
  return { flags: args.slice(0, -1), entry };
}

async function startService(stores: BenchStores, placement: Placement, dir: string, settings: Settings) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // Gateway and service share the data dir: its assertion keys and development issuer. As
  // shipped: the built output with the `service` npm script's node flags.
  const service = startNode(shippedServiceCommand(), {
    cpu: placement.others,
    logFile: join(dir, 'service.stderr'),
    env: childEnv(settings.logLevel, {
      SERVICE_PORT: String(port),
      SERVICE_HOST: '127.0.0.1',
      // The rows compare the gateway with the http-proxy peer on the same plain hop to the
      // service; the price of the internal mutual-TLS hop is not a row yet (issue 18).
      SERVICE_PLAIN_HTTP: 'true',
      DATABASE_URL: stores.databaseUrl,
      PORTICO_DATA_DIR: dir,
    }),
  });
  await waitUntil('resource service', service, () => answers(`${url}/healthz`));
  return { service, url };
}

async function startMainGateway(
  stores: BenchStores,
  placement: Placement,
  dir: string,
  settings: Settings,
  serviceUrl: string,
  // The replicas and baseline rows' gateways: their own config, files and Redis keys, and for
  // the baseline the checkout whose build runs.
  variant: { name: string; rows: readonly string[]; config: object; redisPrefix: string; root?: string } = {
    name: 'gateway',
    rows: Object.values(MAIN_GATEWAY_ROWS),
    config: gatewayConfig(serviceUrl),
    redisPrefix: stores.redisPrefix,
  },
): Promise<GatewayProcess> {
  const { name } = variant;
  const [port, adminPort] = [await freePort(), await freePort()];
  const auditLog = join(dir, name === 'gateway' ? 'audit.log' : `${name}-audit.log`);
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(variant.config));
  const gateway = startNode([...gatewayNodeArgs(variant.rows), ...shippedGatewayCommand(variant.root)], {
    cpu: placement.measured,
    logFile: join(dir, `${name}.stderr`),
    env: childEnv(settings.logLevel, {
      GATEWAY_PORT: String(port),
      ADMIN_PORT: String(adminPort),
      PORTICO_CONFIG: join(dir, `${name}.json`),
      PORTICO_DATA_DIR: dir,
      PORTICO_AUDIT_LOG: auditLog,
      REDIS_URL: stores.redisUrl,
      PORTICO_REDIS_PREFIX: variant.redisPrefix,
    }),
  });
  const admin = `http://127.0.0.1:${adminPort}`;
  await waitUntil(name, gateway, () => answers(`${admin}/readyz`));
  return { process: gateway, url: `https://127.0.0.1:${port}`, admin, auditLog };
}

/**
 * The shipped gateway with GATEWAY_WORKERS=`count` on the static upstream. One worker is pinned
 * like every measured process; two get both CPUs (pinning them to one would measure nothing),
 * which they share with the load generator, the upstream and Redis on a small machine.
 */
async function startWorkersGateway(
  count: number,
  stores: BenchStores,
  placement: Placement,
  dir: string,
  settings: Settings,
  upstream: string,
): Promise<GatewayProcess> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const configFile = join(dir, `workers${count}.json`);
  writeFileSync(
    configFile,
    JSON.stringify({ ...gatewayConfig(upstream), routes: [{ prefix: '/v1', upstream, cache: true }] }),
  );
  const name = `workers${count}`;
  const gateway = startNode([...gatewayNodeArgs([workersRowName(count)]), ...shippedGatewayCommand()], {
    // Unpinned, a child would inherit the driver's CPU alone (bench.ts moves itself there).
    cpu: count === 1 || !placement.pinned ? placement.measured : `${placement.measured},${placement.others}`,
    logFile: join(dir, `${name}.stderr`),
    env: childEnv(settings.logLevel, {
      GATEWAY_WORKERS: String(count),
      GATEWAY_PORT: String(port),
      ADMIN_PORT: String(adminPort),
      PORTICO_CONFIG: configFile,
      PORTICO_DATA_DIR: dir,
      PORTICO_AUDIT_LOG: join(dir, `${name}-audit.log`),
      REDIS_URL: stores.redisUrl,
      PORTICO_REDIS_PREFIX: `${stores.redisPrefix}${name}:`,
    }),
  });
  const admin = `http://127.0.0.1:${adminPort}`;
  await waitUntil(`gateway with ${count} workers`, gateway, () => answers(`${admin}/readyz`));
  return {
    process: gateway,
    url: `https://127.0.0.1:${port}`,
    admin,
    auditLog: join(dir, `${name}-audit.log`),
  };
}

async function startPeer(
  name: string,
  upstream: string,
  placement: Placement,
  dir: string,
  files: { certFile: string; keyFile: string; cert: string },
) {
  const port = await freePort();
  const url = `https://127.0.0.1:${port}`;
  const peer = startNode(
    [plainEntry('measure/bench/http-proxy-peer.ts'), upstream, String(port), files.certFile, files.keyFile],
    { cpu: placement.measured, logFile: join(dir, `${name}.stderr`) },
  );
  const tls = new Agent({ connect: { ca: files.cert } });
  // Any answer means it listens (the service answers 401 without an assertion).
  await waitUntil(name, peer, () => answers(`${url}/v1/orders`, tls, 0));
  await tls.close();
  return { process: peer, url };
}

async function startLadder(
  stores: BenchStores,
  placement: Placement,
  dir: string,
  files: { certFile: string; keyFile: string },
  upstreams: { plain: string; mutualTls: string; pki: DevPkiFiles },
): Promise<GatewayProcess[]> {
  return Promise.all(
    RUNGS.map(async (rung, index) => {
      const [port, adminPort] = [await freePort(), await freePort()];
      const options: LadderGatewayOptions = {
        rung: index,
        port,
        adminPort,
        upstream: rung.upstreamTls ? upstreams.mutualTls : upstreams.plain,
        ...(rung.upstreamTls
          ? {
              upstreamTls: {
                caFile: upstreams.pki.caFile,
                certFile: upstreams.pki.clientCertFile,
                keyFile: upstreams.pki.clientKeyFile,
              },
            }
          : {}),
        certFile: files.certFile,
        keyFile: files.keyFile,
        dataDir: dir,
        redisUrl: stores.redisUrl,
        redisPrefix: `${stores.redisPrefix}ladder${index}:`,
        auditLog: join(dir, `ladder${index}-audit.log`),
        // The plain static upstream reads any POST and answers 200: a collector costing nothing measured.
        ...(rung.traceExport ? { otlpEndpoint: `${upstreams.plain}/v1/traces` } : {}),
      };
      const child = startNode(
        // The shipped gateway's node flags (memory settings), so every rung runs as production does.
        [
          ...gatewayNodeArgs([rung.name]),
          ...shippedScript('gateway', ROOT).flags,
          bundledEntry('measure/bench/ladder-gateway.ts'),
          JSON.stringify(options),
        ],
        { cpu: placement.measured, logFile: join(dir, `ladder${index}.stderr`) },
      );
      const admin = `http://127.0.0.1:${adminPort}`;
      await waitUntil(rung.name, child, () => answers(`${admin}/readyz`));
      return {
        process: child,
        url: `https://127.0.0.1:${port}`,
        admin,
        ...(rung.accounting ? { auditLog: options.auditLog } : {}),
      };
    }),
  );
}

export async function startProcesses(
  stores: BenchStores,
  placement: Placement,
  dir: string,
  settings: Settings,
): Promise<Running> {
  const files = await writeCertificate(dir);
  const { service, url: serviceUrl } = await startService(stores, placement, dir, settings);
  const gateway = await startMainGateway(stores, placement, dir, settings, serviceUrl);
  // A second service process on the same database, and a gateway balancing /v1 over both.
  // (killed with every other child when the bench ends, children.ts)
  const { url: secondUrl } = await startService(stores, placement, dir, settings);
  const replicas = await startMainGateway(stores, placement, dir, settings, serviceUrl, {
    name: 'replicas',
    rows: [REPLICAS_ROW],
    config: {
      ...gatewayConfig(serviceUrl),
      routes: [
        {
          prefix: '/v1',
          upstreams: [{ url: serviceUrl }, { url: secondUrl }],
          auth: 'required',
          cache: true,
        },
      ],
    },
    redisPrefix: `${stores.redisPrefix}replicas:`,
  });
  const peer = await startPeer('peer', serviceUrl, placement, dir, files);
  const baselineRoot = process.env['BENCH_BASELINE'];
  const baseline =
    baselineRoot === undefined || baselineRoot === ''
      ? undefined
      : await startMainGateway(stores, placement, dir, settings, serviceUrl, {
          name: 'baseline',
          rows: BASELINE_ROWS,
          config: gatewayConfig(serviceUrl),
          redisPrefix: `${stores.redisPrefix}baseline:`,
          root: baselineRoot,
        });

  const staticUrl = await startStaticUpstream('static-upstream', placement, dir, []);
  // The same upstream over mutual TLS, certificates from the bench dir's development CA.
  const pki = await ensureDevPki(dir);
  const tlsUrl = await startStaticUpstream('static-upstream-tls', placement, dir, [
    pki.serviceCertFile,
    pki.serviceKeyFile,
    pki.caFile,
  ]);
  const staticPeer = await startPeer('static-peer', staticUrl, placement, dir, files);
  const ladder = await startLadder(stores, placement, dir, files, {
    plain: staticUrl,
    mutualTls: tlsUrl,
    pki,
  });
  // One after the other: the data dir is shared, and a start creates what it lacks.
  const workers = [];
  for (const count of [1, 2])
    workers.push(await startWorkersGateway(count, stores, placement, dir, settings, staticUrl));
  const field = await startField({
    placement,
    dir,
    files,
    staticUrl,
    redisUrl: stores.redisUrl,
    redisPrefix: stores.redisPrefix,
  });
  return {
    dir,
    caCert: files.cert,
    placement,
    service,
    serviceUrl,
    gateway,
    replicas,
    peer,
    staticPeer,
    ladder,
    workers,
    field,
    ...(baseline === undefined ? {} : { baseline }),
  };
}

/** The ladder's static upstream, plain or (with certificate, key and client CA) mutual TLS. */
async function startStaticUpstream(
  name: string,
  placement: Placement,
  dir: string,
  tlsFiles: string[],
): Promise<string> {
  const port = await freePort();
  const child = startNode([join(ROOT, 'measure/bench/static-upstream.ts'), String(port), ...tlsFiles], {
    cpu: placement.others,
    logFile: join(dir, `${name}.stderr`),
  });
  const url = `${tlsFiles.length > 0 ? 'https' : 'http'}://127.0.0.1:${port}`;
  // A TCP connect: the TLS one refuses a probe without the client certificate.
  await waitUntil(name, child, () => listening(port));
  return url;
}

/** Names of the children whose stderr a failed run prints. */
export function childLogNames(): string[] {
  return [
    'service',
    'gateway',
    'baseline',
    'peer',
    'static-upstream',
    'static-upstream-tls',
    'static-peer',
    ...RUNGS.map((_, i) => `ladder${i}`),
    'workers1',
    'workers2',
    'fastify',
    'fastify-bare',
    'node-fixed',
    'node-relay',
    'nginx-plain',
    'nginx-log',
    'nginx-cache',
  ];
}
