/**
 * Where Redis is, read from the environment (REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS and
 * their credentials, TLS and key prefix), apart from the client that connects to it (redis.ts):
 * checking the environment before a start must not load ioredis.
 */
import { redisTlsFromEnv, type RedisTls } from './redis-tls.ts';

export interface HostPort {
  host: string;
  port: number;
}

/**
 * The ACL user and password of the data nodes (REDIS_USERNAME, REDIS_PASSWORD): a cluster's
 * nodes, or the master and replicas behind Sentinel. One node takes them in REDIS_URL.
 */
export interface RedisCredentials {
  username?: string;
  password?: string;
}

/** Where Redis is, as the environment says; `tls` when its connections are encrypted. */
export type RedisTarget = (
  | { mode: 'single'; url: string }
  | { mode: 'cluster'; nodes: HostPort[]; credentials?: RedisCredentials }
  | {
      mode: 'sentinel';
      sentinels: HostPort[];
      name: string;
      credentials?: RedisCredentials;
      /** The sentinels' own password (REDIS_SENTINEL_PASSWORD), when they require one. */
      sentinelPassword?: string;
    }
) & { tls?: RedisTls };

/**
 * The deployment the environment names, or undefined when none is set. Throws (naming the
 * variable) on a malformed list or on more than one way at once: guessing which one the
 * operator meant could split replicas between two Redis deployments, and with them the limits.
 */
export function redisTargetFromEnv(env: NodeJS.ProcessEnv): RedisTarget | undefined {
  const url = env['REDIS_URL'] || undefined;
  const clusterNodes = env['REDIS_CLUSTER_NODES'] || undefined;
  const sentinels = env['REDIS_SENTINELS'] || undefined;
  const set = [url && 'REDIS_URL', clusterNodes && 'REDIS_CLUSTER_NODES', sentinels && 'REDIS_SENTINELS'];
  const named = set.filter((name): name is string => typeof name === 'string');
  if (named.length > 1)
    throw new Error(`set only one of ${named.join(', ')}: they name different Redis deployments`);
  const credentials = credentialsFromEnv(env, url !== undefined);
  const tls = redisTlsFromEnv(env, url);
  const secure = tls === undefined ? {} : { tls };
  const sentinelPassword = env['REDIS_SENTINEL_PASSWORD'] || undefined;
  if (sentinelPassword !== undefined && sentinels === undefined)
    throw new Error('REDIS_SENTINEL_PASSWORD is set but REDIS_SENTINELS is not');
  if (clusterNodes !== undefined)
    return {
      mode: 'cluster',
      nodes: parseHostPorts('REDIS_CLUSTER_NODES', clusterNodes),
      credentials,
      ...secure,
    };
  if (sentinels !== undefined) {
    const name = env['REDIS_SENTINEL_NAME'];
    if (name === undefined || name === '')
      throw new Error('REDIS_SENTINELS is set: REDIS_SENTINEL_NAME must name the master group');
    return {
      mode: 'sentinel',
      sentinels: parseHostPorts('REDIS_SENTINELS', sentinels),
      name,
      credentials,
      ...(sentinelPassword === undefined ? {} : { sentinelPassword }),
      ...secure,
    };
  }
  return url === undefined ? undefined : { mode: 'single', url, ...secure };
}

/**
 * PORTICO_REDIS_PREFIX, `portico:` when unset or empty: the gateway and the apikey CLI must
 * read the same keys, so both take the prefix from here.
 */
export function redisKeyPrefixFromEnv(env: NodeJS.ProcessEnv): string {
  return env['PORTICO_REDIS_PREFIX'] || 'portico:';
}

/** REDIS_USERNAME and REDIS_PASSWORD; refused beside REDIS_URL, whose own would be ambiguous. */
function credentialsFromEnv(env: NodeJS.ProcessEnv, withUrl: boolean): RedisCredentials {
  const username = env['REDIS_USERNAME'] || undefined;
  const password = env['REDIS_PASSWORD'] || undefined;
  if (withUrl && (username !== undefined || password !== undefined))
    throw new Error(
      'REDIS_USERNAME/REDIS_PASSWORD are for REDIS_CLUSTER_NODES and REDIS_SENTINELS: with REDIS_URL put them in the URL (redis://user:password@host:port)',
    );
  return { ...(username === undefined ? {} : { username }), ...(password === undefined ? {} : { password }) };
}

/** `host:port,host:port` (IPv6 as `[addr]:port`). */
export function parseHostPorts(variable: string, value: string): HostPort[] {
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0)
    throw new Error(`${variable} must list host:port entries, got ${JSON.stringify(value)}`);
  return entries.map((entry) => {
    const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(entry);
    const port = Number(match?.[3]);
    if (match === null || port < 1 || port > 65535)
      throw new Error(`${variable}: ${JSON.stringify(entry)} is not host:port`);
    return { host: (match[1] ?? match[2])!, port };
  });
}
