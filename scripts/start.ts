/**
 * `npm start`: Portico with zero configuration, in one process: the resource service (on an
 * embedded PostgreSQL unless DATABASE_URL is set), demo data, and the gateway in front of it
 * over HTTPS with a self-signed certificate and the development token issuer. The hop between
 * them is mutual TLS too: a development CA in the data dir issues the service's certificate
 * and the gateway's client certificate (SERVICE_TLS_* and GATEWAY_UPSTREAM_* name other files;
 * SERVICE_PLAIN_HTTP=true, warned about, drops it). Everything it creates lives in
 * PORTICO_DATA_DIR (default .portico/) and is reused by the next start.
 * One process at a time: the data dir's lock is taken before anything in it is touched.
 */
import { readFileSync } from 'node:fs';
import { Agent, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { loadAssertionKeys } from '../shared/assertion-keys.ts';
import { installCrashGuard } from '../shared/crash-guard.ts';
import { acquireDataDirLock } from '../shared/data-dir-lock.ts';
import { assertPrivateDirectory } from '../shared/data-dir-secrets.ts';
import { devPkiFiles, ensureDevPki } from '../shared/dev-pki.ts';
import { TLS_CLIENT_OPTIONS } from '../shared/tls-policy.ts';
import { Lifecycle } from '../shared/lifecycle.ts';
import { EnvironmentError, environmentProblems, logLevelOf } from '../gateway/environment.ts';
import { reportStartFailure } from '../gateway/start-failure.ts';
import { DEV_ISSUER, loadOrCreateDevIssuer } from '../gateway/identity/dev-issuer.ts';
import { armExitDeadline } from '../shared/exit-deadline.ts';
import { createLogDestination } from '../shared/log-destination.ts';
import { createLogger } from '../gateway/observability/logger.ts';
import { runGateway } from '../gateway/run.ts';
import { defaultUpstreamTls } from '../gateway/config/schema/upstream.ts';
import { describeTargets } from '../gateway/config/schema/routes.ts';
import { startEmbeddedDatabase } from '../resource-service/db/embedded.ts';
import type { EmbeddedDatabase } from '../resource-service/db/embedded.ts';
import { DEMO_CUSTOMERS, hasDemoData, seedDemoData } from '../resource-service/demo-data.ts';
import { readServiceConfig } from '../resource-service/config.ts';
import { createServiceLogger } from '../resource-service/logger.ts';
import { runService } from '../resource-service/run.ts';
import { startClock } from '../shared/start-clock.ts';
import { answerHelp, usageError } from './cli-args.ts';

const USAGE = 'usage: npm start';
answerHelp(`${USAGE}

Starts Portico with zero configuration, in one process: the resource service (on an embedded
PostgreSQL unless DATABASE_URL is set) with demo data, and the gateway in front of it over HTTPS,
mutual TLS between them. Prints the URLs, the trusted issuer, a demo token (when the development
issuer is trusted) and a curl line. Ctrl-C (SIGINT) or SIGTERM drains and stops it.

Environment: PORTICO_DATA_DIR (default .portico: keys, certificates, embedded database, audit
log), PORTICO_CONFIG (gateway config file), GATEWAY_PORT (8443), ADMIN_PORT (8442), ADMIN_HOST
(127.0.0.1), SERVICE_PORT (8081), DATABASE_URL, REDIS_URL, LOG_LEVEL (info); docs/configuration.md.`);
if (process.argv.length > 2) usageError('start', USAGE, `unexpected argument ${process.argv[2]}`);

const env: NodeJS.ProcessEnv = {
  ...process.env,
  PORTICO_DATA_DIR: process.env['PORTICO_DATA_DIR'] || '.portico',
};
const dataDir = env['PORTICO_DATA_DIR'] ?? '.portico';
// A bad LOG_LEVEL is refused below, by a logger that works.
const level = logLevelOf(env);
const gatewayLog = createLogger({ level });
// Never blocking or retrying forever on a stdout whose reader left (`npm start | tee log`).
const serviceLog = createServiceLogger(level, createLogDestination(1));
const TOKEN_TTL_SECONDS = 3600;
const DEFAULT_DATA_DIR = '.portico';
/** The banner's "ready in": from the command, npm's own start included when npm ran this. */
const clock = startClock(env);
/** When each step of the start ended, in ms from the command: where a slow start spent it. */
const reached: Record<string, number> = {};
function mark(step: string): void {
  reached[step] = Math.round(clock.elapsedMs());
}

/** Both servers run in this process: an escaped error drains both, then exits 1. */
const crashGuard = installCrashGuard(gatewayLog, { deadlineMs: 120_000 });

/** Every bad variable of the gateway and the service at once, before anything starts. */
function refuseBadEnvironment(): void {
  const problems = environmentProblems(env);
  try {
    readServiceConfig(env);
  } catch (error) {
    problems.push((error as Error).message);
  }
  if (problems.length > 0) throw new EnvironmentError(problems);
}

async function startEverything(lifecycle: Lifecycle) {
  mark('modules');
  refuseBadEnvironment();
  // Before anything is written there: a data dir others may write is no place for our keys.
  assertPrivateDirectory(dataDir);
  const lock = acquireDataDirLock(dataDir, { purpose: 'npm start' });
  lifecycle.defer('data dir lock', () => lock.release());
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = env['DATABASE_URL'];
  if (databaseUrl === undefined || databaseUrl === '') {
    embedded = await lifecycle.open(
      'embedded PostgreSQL',
      () => startEmbeddedDatabase(dataDir),
      (db) => db.stop(),
    );
    databaseUrl = embedded.url;
    mark('database');
    serviceLog.info(
      { dataDir },
      'DATABASE_URL not set: using the embedded PostgreSQL (PGlite) in the data dir',
    );
  }
  const service = await lifecycle.open(
    'resource service',
    () =>
      runService(env, serviceLog, {
        url: databaseUrl,
        ...(embedded === undefined ? {} : { maxConnections: embedded.maxConnections }),
      }),
    (running) => running.stop(),
  );
  mark('service');
  if (!(await hasDemoData(service.sql))) {
    const [key] = loadAssertionKeys(env, dataDir);
    if (key === undefined) throw new Error('no assertion key');
    const created = await asTheGateway(() => seedDemoData(service.service.url, key));
    serviceLog.info({ customers: DEMO_CUSTOMERS, orders: created }, 'demo data created');
    mark('demoData');
  }
  // The default route follows the service, wherever SERVICE_PORT (0 included) put it.
  env['SERVICE_PORT'] = new URL(service.service.url).port;
  const gateway = await lifecycle.open(
    'gateway',
    () => runGateway(env, gatewayLog),
    (running) => running.stop(),
  );
  mark('gateway');
  return { gateway, service, embedded };
}

/**
 * Runs `work` with fetch speaking to the service as the gateway does: with the gateway's client
 * certificate and trusting the CA the gateway trusts (the demo data goes in through the API).
 */
async function asTheGateway<T>(work: () => Promise<T>): Promise<T> {
  const [tls] = defaultUpstreamTls(env);
  if (tls === undefined) return work();
  if (tls.caFile === devPkiFiles(dataDir).caFile) await ensureDevPki(dataDir);
  const read = (file: string | undefined) => (file === undefined ? undefined : readFileSync(file, 'utf8'));
  const agent = new Agent({
    connect: {
      ...TLS_CLIENT_OPTIONS,
      ca: read(tls.caFile),
      cert: read(tls.certFile),
      key: read(tls.keyFile),
    },
  });
  const previous = getGlobalDispatcher();
  setGlobalDispatcher(agent);
  try {
    return await work();
  } finally {
    setGlobalDispatcher(previous);
    await agent.close();
  }
}

/**
 * What this process opened, closed in reverse: the gateway drains first, so nothing new
 * reaches the service while it drains, and the data dir's lock goes last, once the embedded
 * database has no writer. A start that fails half-way closes the same way.
 */
const lifecycle = new Lifecycle();

async function main(): Promise<void> {
  const { gateway, service, embedded } = await lifecycle.start(startEverything);
  const shutdown = () => lifecycle.close();
  crashGuard.drainWith(shutdown);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    gatewayLog.info({ signal }, 'stopping');
    // Both drains, one after the other, then the embedded database's close: past those and a
    // margin the process ends whatever still runs (shared/exit-deadline.ts).
    const deadlineMs = gateway.config.listener.shutdownTimeoutMs + service.shutdownTimeoutMs + 5000;
    armExitDeadline(deadlineMs, () => gatewayLog.error({ deadlineMs }, 'stop past its deadline: exiting'));
    await shutdown();
    process.exit(0);
  };
  const stopFor = (reason: string) => {
    stop(reason).catch((err: unknown) => {
      gatewayLog.error({ err }, 'unclean stop');
      process.exit(1);
    });
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stopFor(signal));
  if (env['npm_lifecycle_event'] !== undefined) stopWhenOrphaned(() => stopFor('parent exited'));
  // Both ends of the internal hop reload their certificates (and the gateway its policies).
  process.on('SIGHUP', () => {
    service.reload();
    gateway.reload();
  });

  const { jwt } = gateway.config.auth;
  const devIssuer = jwt.jwksUrl === undefined && jwt.jwksFile === undefined;
  // A development token is refused once another issuer is trusted: printing one would mislead.
  const token = devIssuer ? await demoToken() : undefined;
  mark('ready');
  gatewayLog.info({ from: clock.origin, reachedMs: reached }, 'started');
  const url = `https://localhost:${gateway.gateway.addresses.https.port}`;
  const cacert = gateway.devCertificate === undefined ? '' : `--cacert ${gateway.devCertificate} `;
  process.stdout.write(
    [
      '',
      `Portico is running (ready ${(reached['ready']! / 1000).toFixed(1)} s after ${clock.origin === 'npm start' ? '`npm start`' : `the ${clock.origin}`}). Ctrl-C stops it.`,
      `  API      ${url}/v1   (reference: ${url}/v1/docs, OpenAPI: ${url}/v1/openapi.json)`,
      ...gateway.config.routes.map(
        (route) =>
          `  Route    ${route.prefix} → ${describeTargets(route)}   (auth: ${route.auth}, cache: ${route.cache ? 'on' : 'off'})`,
      ),
      `  Admin    http://127.0.0.1:${gateway.gateway.addresses.admin.port}/   (dashboard; /metrics, /readyz)`,
      `  Data     ${dataDir}   (database: ${embedded === undefined ? 'DATABASE_URL' : 'embedded PGlite'}, limits: ${env['REDIS_URL'] ? 'Redis' : 'in memory'})`,
      `  Issuer   ${devIssuer ? `${DEV_ISSUER}, the development issuer of the data dir` : `${jwt.issuer} (keys ${jwt.jwksUrl ?? jwt.jwksFile}, audience ${[jwt.audience].flat().join(' ')}, customer claim ${jwt.customerClaim})`}`,
      '',
      ...(token === undefined
        ? [
            `Tokens come from ${jwt.issuer}: put an access token it issued in TOKEN (docs/identity-provider.md).`,
          ]
        : [
            `A token for the demo customer demo-alice, valid ${TOKEN_TTL_SECONDS / 60} minutes (more: ${tokenCommand()} -- --customer demo-bob):`,
            `export TOKEN=${token}`,
          ]),
      '',
      'Try:',
      `curl ${cacert}-H "Authorization: Bearer $TOKEN" ${url}/v1/orders`,
      '',
    ].join('\n'),
  );
}

function demoToken(): Promise<string> {
  return loadOrCreateDevIssuer(dataDir).sign(
    {
      sub: 'demo-alice-user',
      customer_id: 'demo-alice',
      scope: 'orders:read orders:write payments:write invoices:read',
      client_id: 'portico-start',
    },
    TOKEN_TTL_SECONDS,
  );
}

/** The token command for this data dir: the `token` script reads the same variable. */
function tokenCommand(): string {
  if (dataDir === DEFAULT_DATA_DIR) return 'npm run -s token';
  const quoted = /^[\w./:@-]+$/.test(dataDir) ? dataDir : `'${dataDir.replaceAll("'", "'\\''")}'`;
  return `PORTICO_DATA_DIR=${quoted} npm run -s token`;
}

/**
 * Under npm, a SIGTERM to npm reaches the shell that runs this script, which dies without
 * passing it on: this process would run on as an orphan holding the ports and the data dir.
 * Its parent going away is the signal then, checked twice a second.
 */
function stopWhenOrphaned(stop: () => void): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    stop();
  }, 500);
  timer.unref();
}

main().catch((error: unknown) => {
  // Refused, not failed: one readable line (what, and what to do), no stack trace.
  reportStartFailure(error, gatewayLog, 'npm start');
  process.exit(1);
});
