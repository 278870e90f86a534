/**
 * Process entry of the gateway: configuration from the environment and the config file,
 * then signals. SIGTERM/SIGINT drain and exit 0; SIGHUP reloads the certificate.
 */
import { loadAssertionKeys } from '../shared/assertion-keys.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './logger.ts';
import { startGateway } from './server.ts';
import { ensureDevCertificate } from './tls.ts';

const env = process.env;
const log = createLogger({ level: env['LOG_LEVEL'] ?? 'info' });
// A log reader that went away (EPIPE) must not take the gateway down with it.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});

function port(name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65535) {
    throw new Error(`${name} must be a port number (0-65535), got ${JSON.stringify(value)}`);
  }
  return parsed;
}

async function main(): Promise<void> {
  const { config, warnings } = loadConfig(env);
  for (const warning of warnings) log.warn(warning);
  const dataDir = env['PORTICO_DATA_DIR'] || '.portico';
  const hasCertificate = config.listener.tls.certFile !== undefined;
  if (!hasCertificate)
    log.warn({ dataDir }, 'no certificate configured: using the self-signed development certificate');

  const gateway = await startGateway(config, {
    log,
    port: port('GATEWAY_PORT', 8443),
    adminPort: port('ADMIN_PORT', 9090),
    processMetrics: true,
    assertionKeys: loadAssertionKeys(env, dataDir),
    ...(hasCertificate ? {} : { certificateFiles: await ensureDevCertificate(dataDir) }),
  });

  const stop = (signal: string) => {
    log.info({ signal }, 'shutting down');
    gateway.close().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => {
    try {
      gateway.reloadCertificates();
    } catch (error) {
      log.error(
        { err: { message: (error as Error).message } },
        'certificate reload failed; keeping the current one',
      );
    }
  });
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    log.fatal({ problems: error.problems }, 'invalid gateway config');
  } else {
    log.fatal({ err: error }, 'gateway failed to start');
  }
  process.exitCode = 1;
});
