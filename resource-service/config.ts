/**
 * The service's settings from the environment, checked before anything starts: a bad value is
 * refused with a message that names the variable and says what it takes, not found out at the
 * first request or the first SIGTERM. Every bad variable is reported at once.
 */
import { isIP } from 'node:net';
import { logLevelProblem } from '../shared/log-level.ts';
import { dataDirOf } from '../shared/data-dir.ts';

/** SERVICE_SHUTDOWN_TIMEOUT_MS unset: how long a drain waits (server.ts). Here, not there: the
 * environment is checked before the server's modules load. */
export const DEFAULT_DRAIN_DEADLINE_MS = 10_000;

/** A variable that refuses the start: the message names it and says what it takes. */
export class ServiceConfigError extends Error {
  override name = 'ServiceConfigError';
}

export interface ServiceConfig {
  port: number;
  host: string;
  /**
   * SERVICE_PROBE_PORT: a plain-HTTP listener for the orchestrator's probes, `/readyz` running
   * a query (readiness.ts); undefined: none. SERVICE_PROBE_HOST: its address, 127.0.0.1 unless
   * set (a kubelet's httpGet needs the pod's address, 0.0.0.0).
   */
  probe: { port: number; host: string } | undefined;
  /** How long a drain waits for the requests in flight before cutting them. */
  shutdownTimeoutMs: number;
  /** Database pool size; undefined leaves the pool's default. */
  poolMax: number | undefined;
  dataDir: string;
  /**
   * How the service speaks: HTTPS with the files named by SERVICE_TLS_*, the data dir's
   * development PKI when none is named, plain HTTP only when SERVICE_PLAIN_HTTP=true says so.
   */
  transport: ServiceTransport;
}

export type ServiceTransport =
  | { kind: 'files'; certFile: string; keyFile: string; clientCaFile?: string }
  | { kind: 'dev-pki' }
  | { kind: 'plain-http' };

const DEFAULT_PORT = 8081;
const DEFAULT_HOST = '127.0.0.1';
/** RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens. */
const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

type Problems = string[];

function rawValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === undefined || raw === '' ? undefined : raw;
}

function wholeNumber(
  env: NodeJS.ProcessEnv,
  name: string,
  range: { min: number; max: number; unit: string },
  problems: Problems,
): number | undefined {
  const raw = rawValue(env, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < range.min || value > range.max) {
    problems.push(
      `${name} must be a whole number of ${range.unit} from ${range.min} to ${range.max}, not "${raw}"`,
    );
    return undefined;
  }
  return value;
}

function hostName(env: NodeJS.ProcessEnv, name: string, problems: Problems): string | undefined {
  const raw = rawValue(env, name);
  if (raw === undefined || isIP(raw) !== 0 || HOST_NAME.test(raw)) return raw;
  problems.push(
    `${name} must be an IP address or a host name such as 127.0.0.1, ::1 or localhost, not "${raw}"`,
  );
  return undefined;
}

function transport(env: NodeJS.ProcessEnv, problems: Problems): ServiceTransport {
  const certFile = rawValue(env, 'SERVICE_TLS_CERT_FILE');
  const keyFile = rawValue(env, 'SERVICE_TLS_KEY_FILE');
  const clientCaFile = rawValue(env, 'SERVICE_TLS_CLIENT_CA_FILE');
  const plain = rawValue(env, 'SERVICE_PLAIN_HTTP');
  if (plain !== undefined && plain !== 'true' && plain !== 'false')
    problems.push(`SERVICE_PLAIN_HTTP must be true or false, not "${plain}"`);
  const named = certFile !== undefined || keyFile !== undefined || clientCaFile !== undefined;
  if (plain === 'true') {
    if (named) problems.push('SERVICE_PLAIN_HTTP=true cannot be combined with SERVICE_TLS_* files');
    return { kind: 'plain-http' };
  }
  if (!named) return { kind: 'dev-pki' };
  if (certFile === undefined || keyFile === undefined) {
    problems.push('SERVICE_TLS_CERT_FILE and SERVICE_TLS_KEY_FILE must be set together');
    return { kind: 'dev-pki' };
  }
  return { kind: 'files', certFile, keyFile, ...(clientCaFile === undefined ? {} : { clientCaFile }) };
}

/**
 * @param poolMax the pool size the caller decided (the embedded database has one backend);
 * DATABASE_POOL_MAX is read only when it is undefined.
 */
function probeListener(env: NodeJS.ProcessEnv, problems: Problems): ServiceConfig['probe'] {
  const port = wholeNumber(env, 'SERVICE_PROBE_PORT', { min: 0, max: 65_535, unit: 'port' }, problems);
  const host = hostName(env, 'SERVICE_PROBE_HOST', problems) ?? DEFAULT_HOST;
  return port === undefined ? undefined : { port, host };
}

export function readServiceConfig(env: NodeJS.ProcessEnv, poolMax?: number): ServiceConfig {
  const problems: Problems = [];
  const config: ServiceConfig = {
    shutdownTimeoutMs:
      wholeNumber(
        env,
        'SERVICE_SHUTDOWN_TIMEOUT_MS',
        { min: 0, max: 600_000, unit: 'milliseconds' },
        problems,
      ) ?? DEFAULT_DRAIN_DEADLINE_MS,
    poolMax:
      poolMax ?? wholeNumber(env, 'DATABASE_POOL_MAX', { min: 1, max: 1000, unit: 'connections' }, problems),
    // 0 asks the system for any free port, as tests and `npm start` do.
    port: wholeNumber(env, 'SERVICE_PORT', { min: 0, max: 65_535, unit: 'port' }, problems) ?? DEFAULT_PORT,
    host: hostName(env, 'SERVICE_HOST', problems) ?? DEFAULT_HOST,
    probe: probeListener(env, problems),
    dataDir: dataDirOf(env),
    transport: transport(env, problems),
  };
  const level = logLevelProblem(env);
  if (level !== undefined) problems.push(level);
  if (problems.length > 0) throw new ServiceConfigError(problems.join('; '));
  return config;
}
