/**
 * One gateway as a process runs it, from the environment: config file, Redis, data dir,
 * certificate, audit log, live reload. Shared by `npm run gateway` (main.ts) and `npm start`.
 */
import type { Logger } from 'pino';
import { loadAssertionKeys } from '../shared/assertion-keys.ts';
import { devPkiFiles, ensureDevPki } from '../shared/dev-pki.ts';
import { Lifecycle } from '../shared/lifecycle.ts';
import {
  createRedisConnection,
  describeTarget,
  redisKeyPrefixFromEnv,
  redisTargetFromEnv,
  waitForRedis,
  explainRedisError,
  type RedisClient,
} from '../shared/redis.ts';
import { loadConfig } from './config/load.ts';
import type { GatewayConfig } from './config/schema/gateway.ts';
import { configVersion, watchConfigFile } from './config/reload.ts';
import { createConfigMetrics, type ConfigMetrics } from './observability/config-metrics.ts';
import { startGateway, type Gateway } from './start.ts';
import { createWorkerMetrics, isWorker } from './workers.ts';
import { reloadAcrossWorkers } from './cluster-reload.ts';
import { configStateAcrossWorkers } from './cluster-config-state.ts';
import type { ReloadAnswer } from './config/reload-summary.ts';
import { readGatewayEnvironment } from './environment.ts';
import { ensureDevCertificate } from './edge/tls.ts';
import { describeTargets, routeTargets } from './config/schema/routes.ts';

export interface RunningGateway {
  gateway: Gateway;
  /** The config it runs with (routes served, limits...). */
  config: GatewayConfig;
  /** The certificate served when none is configured (the data dir's development one). */
  devCertificate?: string;
  /** SIGHUP: certificate and rate-limit policies. */
  reload(): void;
  /** Drains the gateway, then closes the config watcher and Redis (what the start opened, in reverse). */
  stop(): Promise<void>;
}

export async function runGateway(env: NodeJS.ProcessEnv, log: Logger): Promise<RunningGateway> {
  const { config, warnings } = loadConfig(env);
  // Before anything opens: a bad variable is refused with every other one (environment.ts).
  const settings = readGatewayEnvironment(env);
  for (const warning of warnings) log.warn(warning);
  const { dataDir } = settings;
  const hasCertificate = config.listener.tls.certFile !== undefined;
  if (!hasCertificate)
    log.warn({ dataDir }, 'no certificate configured: using the self-signed development certificate');

  await prepareUpstreamTls(config, dataDir, log);

  const lifecycle = new Lifecycle();
  return lifecycle.start(async () => {
    const redis = await connectRedis(env, config, log);
    if (redis !== undefined) lifecycle.defer('redis', async () => void (await redis.quit()));
    const devCertificate = hasCertificate ? undefined : await ensureDevCertificate(dataDir);
    const workerMetrics = isWorker() ? createWorkerMetrics() : undefined;
    // Bound once the watcher exists, after the gateway (its apply reconfigures the gateway).
    let reloadConfig: (() => Promise<ReloadAnswer>) | undefined;
    // Made once the gateway's registry exists; the dashboard may ask before (then: nothing yet).
    const late: { configMetrics?: ConfigMetrics } = {};
    const configHere = () => late.configMetrics?.state();
    // A worker's dashboard shows every worker's version, not only its own.
    const configState = isWorker() ? configStateAcrossWorkers(configHere) : configHere;
    const gateway = await startGateway(config, {
      log,
      port: settings.port,
      adminPort: settings.adminPort,
      // 127.0.0.1 unless an operator opens it (a pod network scraped by Prometheus): it can purge.
      adminHost: settings.adminHost,
      processMetrics: true,
      dataDir,
      auditLogPath: settings.auditLogPath,
      env,
      ...(redis === undefined ? {} : { redis }),
      assertionKeys: loadAssertionKeys(env, dataDir),
      ...(devCertificate === undefined ? {} : { certificateFiles: devCertificate }),
      ...(workerMetrics === undefined ? {} : { metricsText: workerMetrics.text }),
      reloadConfig: () => reloadConfig?.(),
      configState,
    });
    workerMetrics?.share(gateway.metrics.registry);
    lifecycle.defer('gateway', () => gateway.close());
    log.info(
      {
        routes: config.routes.map(
          (route) => `${route.prefix} → ${describeTargets(route)} (auth ${route.auth})`,
        ),
      },
      'serving routes',
    );

    const configPath = env['PORTICO_CONFIG'];
    const configMetrics = createConfigMetrics(
      gateway.metrics.registry,
      configPath === undefined || configPath === '' ? 'defaults' : configVersion(configPath),
    );
    late.configMetrics = configMetrics;
    const reloader =
      configPath === undefined || configPath === ''
        ? undefined
        : watchConfigFile(configPath, env, {
            log,
            running: config,
            apply: async (next) => void (await gateway.reconfigure(next)),
            onResult: (result) => configMetrics.reloaded(result),
          });
    if (reloader !== undefined) lifecycle.defer('config watcher', () => reloader.close());
    if (reloader !== undefined) {
      const reloadHere = () => reloader.reload('admin');
      // A worker's admin request reloads every worker, not only the one it reached.
      reloadConfig = isWorker() ? reloadAcrossWorkers(reloadHere) : reloadHere;
    }

    return {
      gateway,
      config,
      ...(devCertificate === undefined ? {} : { devCertificate: devCertificate.certFile }),
      reload() {
        try {
          gateway.reloadCertificates();
        } catch (error) {
          log.error(
            { err: { message: (error as Error).message } },
            'certificate reload failed; keeping the current one',
          );
        }
        void reloader?.reload('SIGHUP');
      },
      stop: () => lifecycle.close(),
    };
  });
}

/**
 * The internal hop's transport, said at every start: the development CA is created when the
 * config names its files (the default route with no GATEWAY_UPSTREAM_* variables), and each
 * plain-HTTP upstream is an operator's explicit choice worth a warning.
 */
async function prepareUpstreamTls(config: GatewayConfig, dataDir: string, log: Logger): Promise<void> {
  const dev = devPkiFiles(dataDir);
  const origins = new Set(
    config.routes.flatMap((route) => routeTargets(route).map((target) => new URL(target.url).origin)),
  );
  // Only entries a route uses: a config whose routes go elsewhere needs no development CA.
  const usesDev = config.proxy.upstreamTls.some(
    (entry) =>
      origins.has(new URL(entry.origin).origin) &&
      [entry.caFile, entry.certFile, entry.keyFile].some(
        (file) => file !== undefined && [dev.caFile, dev.clientCertFile, dev.clientKeyFile].includes(file),
      ),
  );
  if (usesDev) {
    await ensureDevPki(dataDir);
    log.warn(
      { dataDir },
      'no GATEWAY_UPSTREAM_* files: mutual TLS to the service with the development CA of the data dir',
    );
  }
  for (const origin of origins) {
    if (origin.startsWith('http:'))
      log.warn({ upstream: origin }, 'plain HTTP to this upstream: anyone on that network reads its traffic');
  }
}

/**
 * The Redis client of REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS, or undefined (and a
 * warning) without any.
 */
async function connectRedis(
  env: NodeJS.ProcessEnv,
  config: GatewayConfig,
  log: Logger,
): Promise<RedisClient | undefined> {
  const target = redisTargetFromEnv(env);
  if (target === undefined) {
    log.warn(
      'REDIS_URL (or REDIS_CLUSTER_NODES, REDIS_SENTINELS) not set: rate limits, API-key revocations and cache invalidations are per process',
    );
    return undefined;
  }
  log.info({ redis: describeTarget(target) }, 'shared state in Redis');
  const redis = createRedisConnection(target, {
    keyPrefix: redisKeyPrefixFromEnv(env),
    commandTimeoutMs: config.rateLimits.storeTimeoutMs,
  });
  let lastError: Error | undefined;
  redis.on('error', (error: Error) => {
    lastError = error;
    log.debug({ err: { message: error.message } }, 'redis connection error');
  });
  if (!(await waitForRedis(redis, 2000)))
    log.warn(
      // A TLS mismatch shows only as a reset: the reason names the likely cause and its setting.
      lastError === undefined ? {} : { reason: explainRedisError(lastError, target.tls !== undefined) },
      'Redis not reachable yet: starting degraded, retrying',
    );
  return redis;
}
