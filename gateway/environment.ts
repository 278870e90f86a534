/**
 * The gateway's process settings from the environment (ports, admin bind address, data dir,
 * audit log, workers, log level, Redis, key rings), read in one place and judged all at once:
 * a start refuses a bad value before it opens anything (the database of `npm start`
 * included), and `check` (check.ts) reports every bad variable in one run.
 */
import { join } from 'node:path';
import { logLevelProblem, usableLogLevel } from '../shared/log-level.ts';
import { ASSERTION_KEYS_ENV, parseAssertionKeys } from '../shared/assertion-keys.ts';
import { parseHmacKeyRing } from '../shared/data-dir-secrets.ts';
import { redisTargetFromEnv } from '../shared/redis-target.ts';
import { ADMIN_TOKEN_ENV, MIN_TOKEN_LENGTH } from './admin/purge-guard.ts';
import { API_KEY_SIGNING_KEYS_ENV } from './identity/api-key-signing-keys.ts';
import { workerCount } from './worker-count.ts';
import { dataDirOf } from '../shared/data-dir.ts';

/**
 * Not 9090: that is Prometheus's own port (9091-9094 its Pushgateway and Alertmanager), where
 * the scraper beside the gateway would clash, and the 9100-9999 range Prometheus hands out to
 * exporters is taken to the last port. 8442 sits just below the HTTPS port, clear of the other
 * gateways' defaults (Kong 8000/8001/8443/8444, Traefik and Tyk 8080, Envoy 9901), and leaves
 * 8444 and up for more gateways on one host (deploy/compose.yaml publishes a second on 8444).
 */
export const DEFAULT_ADMIN_PORT = 8442;
export const DEFAULT_GATEWAY_PORT = 8443;

export interface GatewayEnvironment {
  /** GATEWAY_PORT: HTTPS; 0 picks a free one. */
  port: number;
  /** ADMIN_PORT. */
  adminPort: number;
  /** ADMIN_HOST: 127.0.0.1 unless an operator opens it (it can purge). */
  adminHost: string;
  /** PORTICO_DATA_DIR. */
  dataDir: string;
  /** PORTICO_AUDIT_LOG, else the data dir's `audit.log`. */
  auditLogPath: string;
  /** LOG_LEVEL. */
  logLevel: string;
}

/** Bad environment variables, one `NAME ...` reason per problem; the message is one line. */
export class EnvironmentError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(problems.join('; '));
    this.name = 'EnvironmentError';
    this.problems = problems;
  }
}

/** The settings, or an EnvironmentError naming every bad variable. */
export function readGatewayEnvironment(env: NodeJS.ProcessEnv): GatewayEnvironment {
  const problems = environmentProblems(env);
  if (problems.length > 0) throw new EnvironmentError(problems);
  const dataDir = dataDirOf(env);
  return {
    port: port(env, 'GATEWAY_PORT', DEFAULT_GATEWAY_PORT),
    adminPort: port(env, 'ADMIN_PORT', DEFAULT_ADMIN_PORT),
    adminHost: env['ADMIN_HOST'] || '127.0.0.1',
    dataDir,
    auditLogPath: env['PORTICO_AUDIT_LOG'] || join(dataDir, 'audit.log'),
    logLevel: env['LOG_LEVEL'] || 'info',
  };
}

/** Every bad variable the gateway reads, without opening, creating or connecting to anything. */
export function environmentProblems(env: NodeJS.ProcessEnv): string[] {
  const checks: (() => unknown)[] = [
    () => port(env, 'GATEWAY_PORT', DEFAULT_GATEWAY_PORT),
    () => port(env, 'ADMIN_PORT', DEFAULT_ADMIN_PORT),
    () => workerCount(env),
    () => logLevel(env),
    () => redisTargetFromEnv(env),
    () => adminToken(env),
    () => ring(env, ASSERTION_KEYS_ENV, parseAssertionKeys),
    () => ring(env, API_KEY_SIGNING_KEYS_ENV, (spec) => parseHmacKeyRing(spec, API_KEY_SIGNING_KEYS_ENV)),
  ];
  const problems: string[] = [];
  for (const check of checks) {
    try {
      check();
    } catch (error) {
      problems.push((error as Error).message);
    }
  }
  return problems;
}

/** LOG_LEVEL when pino knows it, else info: the logger must exist to report the bad value. */
export function logLevelOf(env: NodeJS.ProcessEnv): string {
  return usableLogLevel(env);
}

export function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed > 65535) {
    throw new Error(`${name} must be a port number (0-65535), got ${JSON.stringify(value)}`);
  }
  return parsed;
}

function logLevel(env: NodeJS.ProcessEnv): void {
  const problem = logLevelProblem(env);
  if (problem !== undefined) throw new Error(problem);
}

function adminToken(env: NodeJS.ProcessEnv): void {
  const token = env[ADMIN_TOKEN_ENV]?.trim();
  if (token !== undefined && token !== '' && token.length < MIN_TOKEN_LENGTH)
    throw new Error(`${ADMIN_TOKEN_ENV} must be at least ${MIN_TOKEN_LENGTH} characters`);
}

function ring(env: NodeJS.ProcessEnv, name: string, parse: (spec: string) => unknown): void {
  const spec = env[name];
  if (spec !== undefined && spec.trim() !== '') parse(spec);
}
