/**
 * The resource service as a process runs it, from the environment. Shared by
 * `npm run service` (main.ts) and `npm start`, which passes the embedded database's URL.
 *
 * Each component registers its close on one lifecycle the moment it is created: a start that
 * fails half-way (a migration that fails, a port in use) closes exactly what it had opened, so
 * no pool connection outlives it, and stop() closes the same stack in reverse: listener
 * (drained), then the database pool.
 */
import type { Logger } from 'pino';
import type { Sql } from 'postgres';
import { loadAssertionKeys } from '../shared/assertion-keys.ts';
import { ensureDevPki } from '../shared/dev-pki.ts';
import { Lifecycle } from '../shared/lifecycle.ts';
import { readServiceConfig, ServiceConfigError } from './config.ts';
import type { ServiceConfig } from './config.ts';
import { purgeExpiredIdempotencyRecords } from './data/idempotency.ts';
import { connectDatabase } from './db/connect.ts';
import { migrate } from './db/migrate.ts';
import { startProbeListener, type ProbeListener } from './readiness.ts';
import { startService } from './server.ts';
import type { RunningService } from './server.ts';
import { describeServiceCertificate, loadServiceTls, type ServiceTlsFiles } from './tls.ts';

const PURGE_INTERVAL_MS = 10 * 60 * 1000;

export interface ServiceProcess {
  service: RunningService;
  /** The probe listener (SERVICE_PROBE_PORT), whose `/readyz` runs a query; undefined without. */
  probe: ProbeListener | undefined;
  sql: Sql;
  /** The files the service's TLS uses; undefined over plain HTTP. */
  tls: ServiceTlsFiles | undefined;
  /** SIGHUP: re-reads the certificate, key and client CA; a bad set is logged and not taken. */
  reload(): void;
  /** Drains the service (SERVICE_SHUTDOWN_TIMEOUT_MS at most), then ends the database pool. */
  stop(): Promise<void>;
  /** SERVICE_SHUTDOWN_TIMEOUT_MS: the drain's deadline. */
  shutdownTimeoutMs: number;
}

/**
 * The TLS files the transport names; the data dir's development PKI when none is named. Plain
 * HTTP is an operator's explicit choice, said again at every start.
 */
export async function serviceTlsFiles(
  config: ServiceConfig,
  logger: Logger,
): Promise<ServiceTlsFiles | undefined> {
  const { transport } = config;
  if (transport.kind === 'plain-http') {
    logger.warn(
      'SERVICE_PLAIN_HTTP=true: the service speaks plain HTTP; anyone on its network reads and can call it',
    );
    return undefined;
  }
  if (transport.kind === 'files') {
    try {
      loadServiceTls(transport);
    } catch (error) {
      throw new ServiceConfigError(
        `SERVICE_TLS_CERT_FILE, SERVICE_TLS_KEY_FILE and SERVICE_TLS_CLIENT_CA_FILE must name a matching PEM certificate, key and CA: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (transport.clientCaFile === undefined)
      logger.warn('SERVICE_TLS_CLIENT_CA_FILE not set: HTTPS without client certificates (no mutual TLS)');
    return transport;
  }
  const pki = await ensureDevPki(config.dataDir);
  logger.warn(
    { dataDir: config.dataDir },
    'no SERVICE_TLS_* files: mutual TLS with the development CA of the data dir',
  );
  return { certFile: pki.serviceCertFile, keyFile: pki.serviceKeyFile, clientCaFile: pki.caFile };
}

/** What a drain found, for the pool's close that runs after it. */
interface DrainOutcome {
  finished: boolean;
}

async function startComponents(
  lifecycle: Lifecycle,
  config: ServiceConfig,
  env: NodeJS.ProcessEnv,
  logger: Logger,
  database: { url: string },
  drain: DrainOutcome,
) {
  // Before anything opens: files that do not load refuse the start, naming the variables.
  const tls = await serviceTlsFiles(config, logger);
  const sql = await lifecycle.open(
    'database pool',
    () =>
      connectDatabase({
        url: database.url,
        ...(config.poolMax === undefined ? {} : { max: config.poolMax }),
      }),
    // After a cut, the queries of the requests cut are not waited for: their connections
    // close, and PostgreSQL rolls back what they had begun.
    (pool) => pool.end({ timeout: drain.finished ? 5 : 0 }),
  );
  const applied = await migrate(sql);
  if (applied.length > 0) logger.info({ applied }, 'database migrated');

  const service = await lifecycle.open(
    'listener',
    () =>
      startService({
        sql,
        logger,
        assertionKeys: loadAssertionKeys(env, config.dataDir),
        port: config.port,
        host: config.host,
        ...(tls === undefined ? {} : { tls }),
      }),
    async (running) => {
      drain.finished = await running.close({ deadlineMs: config.shutdownTimeoutMs });
    },
  );
  logger.info(
    {
      url: service.url,
      ...(tls === undefined
        ? {}
        : {
            certificate: describeServiceCertificate(tls),
            clientCertificates: tls.clientCaFile !== undefined,
          }),
    },
    'resource service listening',
  );

  // Opened after the service listener, so closed before it: readiness fails as the drain begins.
  const probeAt = config.probe;
  const probe =
    probeAt === undefined
      ? undefined
      : await lifecycle.open(
          'probe listener',
          () => startProbeListener({ sql, ...probeAt }),
          (listener) => listener.close(),
        );
  if (probe !== undefined) logger.info({ url: probe.url }, 'readiness probe listening');

  const purge = setInterval(() => {
    purgeExpiredIdempotencyRecords(sql).catch((err: unknown) =>
      logger.warn({ err }, 'idempotency purge failed'),
    );
  }, PURGE_INTERVAL_MS);
  purge.unref();
  lifecycle.defer('idempotency purge', () => clearInterval(purge));
  return { sql, service, tls, probe };
}

export async function runService(
  env: NodeJS.ProcessEnv,
  logger: Logger,
  database: { url: string; maxConnections?: number },
): Promise<ServiceProcess> {
  const config = readServiceConfig(env, database.maxConnections);
  const lifecycle = new Lifecycle();
  const drain: DrainOutcome = { finished: true };
  const { sql, service, tls, probe } = await lifecycle.start((lc) =>
    startComponents(lc, config, env, logger, database, drain),
  );
  return {
    service,
    probe,
    sql,
    tls,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    reload() {
      try {
        service.reloadCertificates();
        if (tls !== undefined)
          logger.info({ certificate: describeServiceCertificate(tls) }, 'certificates reloaded');
      } catch (error) {
        logger.error(
          { err: { message: (error as Error).message } },
          'certificate reload failed; keeping the current one',
        );
      }
    },
    async stop() {
      await lifecycle.close();
      logger.info({ finished: drain.finished }, 'resource service stopped');
    },
  };
}
