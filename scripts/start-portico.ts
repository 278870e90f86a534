/**
 * `npm start`'s third step (start.ts and start-prepare.ts come first): with the environment
 * checked, the data dir locked and the embedded database opening in its thread, starts the
 * resource service, creates the demo data, starts the gateway in front of it, and prints the
 * banner.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { loadAssertionKeys } from '../shared/assertion-keys.ts';
import { devPkiFiles, ensureDevPki } from '../shared/dev-pki.ts';
import { TLS_CLIENT_OPTIONS } from '../shared/tls-policy.ts';
import type { Lifecycle } from '../shared/lifecycle.ts';
import { DEV_ISSUER, loadOrCreateDevIssuer } from '../gateway/identity/dev-issuer.ts';
import { armExitDeadline } from '../shared/exit-deadline.ts';
import { runGateway } from '../gateway/run.ts';
import { defaultUpstreamTls } from '../gateway/config/schema/upstream.ts';
import { describeTargets } from '../gateway/config/schema/routes.ts';
import type { EmbeddedDatabaseThread } from '../resource-service/db/embedded-thread.ts';
import { DEMO_CUSTOMERS, hasDemoData, seedDemoData } from '../resource-service/demo-data.ts';
import { runService } from '../resource-service/run.ts';
import type { StartClock } from '../shared/start-clock.ts';
import { validatorCacheCounts } from '../shared/validator-cache.ts';
import { DEFAULT_DATA_DIR } from '../shared/data-dir.ts';

const TOKEN_TTL_SECONDS = 3600;

/** What the first step hands on. */
export interface StartContext {
  env: NodeJS.ProcessEnv;
  dataDir: string;
  lifecycle: Lifecycle;
  /** The embedded database's thread; undefined when DATABASE_URL names a server. */
  database: EmbeddedDatabaseThread | undefined;
  gatewayLog: Logger;
  serviceLog: Logger;
  /** Notes when a step of the start ended. */
  mark: (step: string) => void;
}

type Started = Awaited<ReturnType<typeof startServers>>;

/** Starts everything; `serve` then wires the signals and prints the banner. */
export async function startPortico(
  context: StartContext,
): Promise<{ serve(timing: { clock: StartClock; reached: Record<string, number> }): Promise<void> }> {
  const started = await startServers(context);
  return { serve: (timing) => serve(context, started, timing) };
}

async function startServers(context: StartContext) {
  const { env, dataDir, lifecycle, serviceLog, mark } = context;
  // Without the thread, start.ts saw DATABASE_URL set.
  const embedded = context.database === undefined ? undefined : await context.database.ready;
  const databaseUrl = embedded?.url ?? env['DATABASE_URL'] ?? '';
  if (embedded !== undefined) {
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
    const created = await asTheGateway(env, dataDir, () => seedDemoData(service.service.url, key));
    serviceLog.info({ customers: DEMO_CUSTOMERS, orders: created }, 'demo data created');
    mark('demoData');
  }
  // The default route follows the service, wherever SERVICE_PORT (0 included) put it.
  env['SERVICE_PORT'] = new URL(service.service.url).port;
  const gateway = await lifecycle.open(
    'gateway',
    () => runGateway(env, context.gatewayLog),
    (running) => running.stop(),
  );
  mark('gateway');
  return { gateway, service, embedded };
}

/**
 * Runs `work` with fetch speaking to the service as the gateway does: with the gateway's client
 * certificate and trusting the CA the gateway trusts (the demo data goes in through the API).
 */
async function asTheGateway<T>(env: NodeJS.ProcessEnv, dataDir: string, work: () => Promise<T>): Promise<T> {
  const [tls] = defaultUpstreamTls(env);
  if (tls === undefined) return work();
  if (tls.caFile === devPkiFiles(dataDir).caFile) await ensureDevPki(dataDir);
  // undici's whole index, fetch's dispatcher included: a start with its demo data never loads it.
  const { Agent, getGlobalDispatcher, setGlobalDispatcher } = await import('undici');
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

/** Signals and the orphan watch wired, then the banner with the demo token. */
async function serve(
  context: StartContext,
  { gateway, service, embedded }: Started,
  { clock, reached }: { clock: StartClock; reached: Record<string, number> },
): Promise<void> {
  const { env, dataDir, gatewayLog, lifecycle } = context;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    gatewayLog.info({ signal }, 'stopping');
    // Both drains, one after the other, then the embedded database's close: past those and a
    // margin the process ends whatever still runs (shared/exit-deadline.ts).
    const deadlineMs = gateway.config.listener.shutdownTimeoutMs + service.shutdownTimeoutMs + 5000;
    armExitDeadline(deadlineMs, () => gatewayLog.error({ deadlineMs }, 'stop past its deadline: exiting'));
    await lifecycle.close();
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
  const token = devIssuer ? await demoToken(dataDir) : undefined;
  context.mark('ready');
  // How many validators came from the data dir's cache: a warm start compiles none.
  gatewayLog.info({ from: clock.origin, reachedMs: reached, validators: validatorCacheCounts }, 'started');
  // The gateway's log is batched (a quarter second at most): its lines go out before the banner,
  // so the banner is the last thing the start prints.
  gatewayLog.flush();
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
            `A token for the demo customer demo-alice, valid ${TOKEN_TTL_SECONDS / 60} minutes (more: ${tokenCommand(dataDir)} -- --customer demo-bob):`,
            `export TOKEN=${token}`,
          ]),
      '',
      'Try:',
      `curl ${cacert}-H "Authorization: Bearer $TOKEN" ${url}/v1/orders`,
      '',
    ].join('\n'),
  );
}
function demoToken(dataDir: string): Promise<string> {
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
function tokenCommand(dataDir: string): string {
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
