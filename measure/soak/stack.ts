/**
 * The soak's stack: the resource service and the gateway as separate processes, started the
 * way production starts them (the built output, with the node flags of the `service` and
 * `gateway` npm scripts) on the run's own database, Redis key prefix and data dir, with a
 * config file written for the run.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { request } from 'undici';
import { childEnv, freePort, startNode, waitUntil } from '../bench/children.ts';
import { shippedGatewayCommand, shippedServiceCommand } from '../bench/processes.ts';
import type { BenchStores } from '../bench/stores.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** Requests per window that each customer may make, and the window (`customer` policy). */
export const CUSTOMER_LIMIT = { limit: 300, window: '10s', seconds: 10 } as const;
/** Failed authentications per client address per window (the built-in throttle). */
export const AUTH_FAILURE_LIMIT = { limit: 20, window: '60s' } as const;

export interface Stack {
  service: ChildProcess;
  gateway: ChildProcess;
  urls: { gateway: string; admin: string; service: string };
  /** The gateway's development certificate (PEM), created by the gateway in the data dir. */
  caCert: string;
  /** Where each process's preload writes its memory figures (see memory-report.ts). */
  memoryFiles: { gateway: string; service: string };
  logLevel: string;
  logs: { service: LogWatch; gateway: LogWatch };
}

/** Warnings and errors a child logged (pino levels 40 and up), the latest few kept whole. */
export interface LogWatch {
  warn: number;
  error: number;
  latest: string[];
}

const KEPT_LOG_LINES = 10;

/**
 * Reads a child's stdout (pino JSON lines) as it comes: requests log at info, which is only
 * counted away, while warnings and errors are what explains an unexpected answer.
 */
function watchLog(child: ChildProcess): LogWatch {
  const watch: LogWatch = { warn: 0, error: 0, latest: [] };
  if (child.stdout === null) return watch;
  createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (line) => {
    const level = Number(/"level":(\d+)/.exec(line)?.[1] ?? 0);
    if (level < 40) return;
    if (level >= 50) watch.error++;
    else watch.warn++;
    watch.latest.push(line.length > 600 ? `${line.slice(0, 600)}...` : line);
    if (watch.latest.length > KEPT_LOG_LINES) watch.latest.shift();
  });
  return watch;
}

/**
 * Every policy counts every request it matches. One per customer, above what the normal
 * traffic of one customer sends (about 11 req/s against 30 allowed) and below what the
 * hammering customer sends (50 req/s), so that 429s come from the limit, not from chance.
 */
function gatewayConfig(serviceUrl: string): object {
  return {
    routes: [{ prefix: '/v1', upstream: serviceUrl, auth: 'required', cache: true }],
    // A cache filling up to its budget grows by design, and at the default 64 MiB it would
    // still be filling after ten minutes, hiding a leak behind it. At 1 MiB it is full within
    // the first minute, and from then on the soak exercises its evictions instead.
    cache: { maxBytes: 1024 * 1024 },
    rateLimits: {
      policies: [
        { name: 'customer', key: 'customer', limit: CUSTOMER_LIMIT.limit, window: CUSTOMER_LIMIT.window },
      ],
      authFailures: { limit: AUTH_FAILURE_LIMIT.limit, window: AUTH_FAILURE_LIMIT.window },
    },
    // No listener.tls: the gateway creates and serves the data dir's development certificate.
    // No auth.jwt: the data dir's development issuer is trusted; the soak signs with it.
  };
}

/**
 * memory-report.ts as plain JavaScript in the run's dir, for `--import`. Preloading the .ts
 * source would load Node's TypeScript stripper into both processes (about 17 MiB resident for
 * the process's whole life, measured on an idle gateway), which production never runs: the
 * gateway's RSS and the peak the verdict judges would be the stripper's as well.
 */
function plainPreload(dir: string): string[] {
  const file = join(dir, 'memory-report.mjs');
  const source = readFileSync(join(ROOT, 'measure/soak/memory-report.ts'), 'utf8');
  writeFileSync(file, stripTypeScriptTypes(source));
  return ['--import', file];
}

async function answers200(url: string): Promise<boolean> {
  const response = await request(url);
  await response.body.dump();
  return response.statusCode === 200;
}

/** Starts the service, then the gateway in front of it; resolves once both are ready. */
export async function startStack(stores: BenchStores, dir: string, logLevel: string): Promise<Stack> {
  const [servicePort, gatewayPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const urls = {
    service: `http://127.0.0.1:${servicePort}`,
    gateway: `https://127.0.0.1:${gatewayPort}`,
    admin: `http://127.0.0.1:${adminPort}`,
  };
  const memoryFiles = {
    gateway: join(dir, 'gateway-memory.json'),
    service: join(dir, 'service-memory.json'),
  };
  const preload = plainPreload(dir);
  writeFileSync(join(dir, 'gateway.json'), JSON.stringify(gatewayConfig(urls.service), null, 2));

  // Gateway and service share the data dir: its assertion keys and development issuer.
  const service = startNode([...preload, ...shippedServiceCommand(ROOT)], {
    cpu: undefined,
    captureStdout: true,
    logFile: join(dir, 'service.stderr'),
    env: childEnv(logLevel, {
      SERVICE_PORT: String(servicePort),
      SERVICE_HOST: '127.0.0.1',
      DATABASE_URL: stores.databaseUrl,
      PORTICO_DATA_DIR: dir,
      // The gateway's config routes to http: (as before issue 18's mutual TLS): asked for explicitly.
      SERVICE_PLAIN_HTTP: 'true',
      SOAK_MEMORY_FILE: memoryFiles.service,
    }),
  });
  const serviceLog = watchLog(service);
  await waitUntil('resource service', service, () => answers200(`${urls.service}/healthz`), 60_000);

  // As shipped: the built output with the `gateway` npm script's node flags (heap sizing
  // included), which is what the soak's memory verdict is about.
  const gateway = startNode([...preload, ...shippedGatewayCommand(ROOT)], {
    cpu: undefined,
    captureStdout: true,
    logFile: join(dir, 'gateway.stderr'),
    env: childEnv(logLevel, {
      GATEWAY_PORT: String(gatewayPort),
      ADMIN_PORT: String(adminPort),
      PORTICO_CONFIG: join(dir, 'gateway.json'),
      PORTICO_DATA_DIR: dir,
      PORTICO_AUDIT_LOG: join(dir, 'audit.log'),
      REDIS_URL: stores.redisUrl,
      PORTICO_REDIS_PREFIX: stores.redisPrefix,
      SOAK_MEMORY_FILE: memoryFiles.gateway,
    }),
  });
  const gatewayLog = watchLog(gateway);
  await waitUntil('gateway', gateway, () => answers200(`${urls.admin}/readyz`), 60_000);

  const certFile = join(dir, 'tls', 'localhost.crt');
  if (!existsSync(certFile)) throw new Error(`the gateway is ready but ${certFile} does not exist`);
  return {
    service,
    gateway,
    urls,
    caCert: readFileSync(certFile, 'utf8'),
    memoryFiles,
    logLevel,
    logs: { service: serviceLog, gateway: gatewayLog },
  };
}

/** The end of each child's stderr, for a run that failed. */
export function childLogTails(dir: string): string[] {
  const tails: string[] = [];
  for (const name of ['service', 'gateway']) {
    const file = join(dir, `${name}.stderr`);
    const log = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
    if (log !== '') tails.push(`--- ${name} stderr (last 2000 characters) ---\n${log.slice(-2000)}`);
  }
  return tails;
}
