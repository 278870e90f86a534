/**
 * Process entry of the gateway: configuration from the environment and the config file,
 * then signals. SIGTERM/SIGINT drain and exit 0; SIGHUP reloads the certificate and the
 * rate-limit policies (which also reload when the config file changes).
 */
import { join } from 'node:path';
import { loadAssertionKeys } from '../shared/assertion-keys.ts';
import { createRedisClient, waitForRedis } from '../shared/redis.ts';
import { ConfigError, loadConfig } from './config.ts';
import { watchConfigFile } from './config-reload.ts';
import { createLogger } from './logger.ts';
import { startGateway } from './server.ts';
import { ensureDevCertificate } from './tls.ts';

const env = process.env;
const log = createLogger({ level: env['LOG_LEVEL'] ?? 'info' });

function port(name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65535) {
    throw new Error(`${name} must be a port number (0-65535), got ${JSON.stringify(value)}`);
  }
  return parsed;
}

// Registered before anything starts: SIGHUP's default action ends the process, and one
// arriving while the gateway starts must not.
let onHangup = () => log.info('SIGHUP during start-up: nothing to reload yet');
process.on('SIGHUP', () => onHangup());

async function main(): Promise<void> {
  const { config, warnings } = loadConfig(env);
  for (const warning of warnings) log.warn(warning);
  const dataDir = env['PORTICO_DATA_DIR'] || '.portico';
  const hasCertificate = config.listener.tls.certFile !== undefined;
  if (!hasCertificate)
    log.warn({ dataDir }, 'no certificate configured: using the self-signed development certificate');

  const redisUrl = env['REDIS_URL'];
  const redis =
    redisUrl === undefined || redisUrl === ''
      ? undefined
      : createRedisClient({
          url: redisUrl,
          keyPrefix: env['PORTICO_REDIS_PREFIX'] || 'portico:',
          commandTimeoutMs: config.rateLimits.storeTimeoutMs,
        });
  if (redis === undefined) {
    log.warn('REDIS_URL not set: rate limits, API-key revocations and cache invalidations are per process');
  } else {
    redis.on('error', (error: Error) =>
      log.debug({ err: { message: error.message } }, 'redis connection error'),
    );
    if (!(await waitForRedis(redis, 2000))) log.warn('Redis not reachable yet: starting degraded, retrying');
  }

  const auditLogPath = env['PORTICO_AUDIT_LOG'] || join(dataDir, 'audit.log');
  const gateway = await startGateway(config, {
    log,
    port: port('GATEWAY_PORT', 8443),
    adminPort: port('ADMIN_PORT', 9090),
    processMetrics: true,
    dataDir,
    auditLogPath,
    ...(redis === undefined ? {} : { redis }),
    assertionKeys: loadAssertionKeys(env, dataDir),
    ...(hasCertificate ? {} : { certificateFiles: await ensureDevCertificate(dataDir) }),
  });

  const configPath = env['PORTICO_CONFIG'];
  const reloader =
    configPath === undefined || configPath === ''
      ? undefined
      : watchConfigFile(configPath, env, {
          log,
          apply: (next) => gateway.reconfigureRateLimits(next.rateLimits),
        });

  const stop = (signal: string) => {
    log.info({ signal }, 'shutting down');
    reloader?.close();
    gateway
      .close()
      .then(() => redis?.quit())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          log.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  onHangup = () => {
    try {
      gateway.reloadCertificates();
    } catch (error) {
      log.error(
        { err: { message: (error as Error).message } },
        'certificate reload failed; keeping the current one',
      );
    }
    reloader?.reload('SIGHUP');
  };
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    log.fatal({ problems: error.problems }, 'invalid gateway config');
  } else {
    log.fatal({ err: error }, 'gateway failed to start');
  }
  process.exitCode = 1;
});
