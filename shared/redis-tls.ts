/**
 * TLS to Redis, the same for every deployment: one node, a Cluster's data nodes, Sentinel's
 * sentinels and the master and replicas they name. Counters, revocations, invalidations and the
 * Redis password cross the network on these connections, so between hosts they should never be
 * plain text.
 *
 * On/off: one node says it by its URL's scheme (`rediss://`); a Cluster or Sentinel, which have no
 * URL, by REDIS_TLS=true. What the connections trust and present comes from files named by
 * REDIS_TLS_CA_FILE, REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE, and the name the servers'
 * certificates must carry from REDIS_TLS_SERVERNAME (by default, the address connected to: a
 * Cluster or Sentinel hands out addresses, so its certificates need them, or this setting). A
 * setting that cannot take effect (a CA file with TLS off, a certificate without its key) stops
 * the start: a deployment believed encrypted that is not would be worse than one that fails.
 */
import { readFileSync } from 'node:fs';
import type { SecureVersion } from 'node:tls';
import { TLS_CLIENT_OPTIONS } from './tls-policy.ts';

/** The TLS options of every Redis connection (Node's tls.connect options). */
export interface RedisTls {
  minVersion: SecureVersion;
  ciphers: string;
  ecdhCurve: string;
  /** PEM CA(s) trusted instead of Node's defaults; unset: the system's CAs (and NODE_EXTRA_CA_CERTS). */
  ca?: string;
  /** Client certificate and key, for a Redis with `tls-auth-clients yes`. */
  cert?: string;
  key?: string;
  /** The name server certificates are checked against (and sent as SNI). */
  servername?: string;
}

const FILES = [
  ['REDIS_TLS_CA_FILE', 'ca'],
  ['REDIS_TLS_CERT_FILE', 'cert'],
  ['REDIS_TLS_KEY_FILE', 'key'],
] as const;

/**
 * The TLS options the environment names, or undefined for plain TCP. `url`: REDIS_URL when that
 * is how Redis is named (its scheme decides); undefined for a Cluster or Sentinel. Throws, naming
 * the variable, on anything that cannot take effect.
 */
export function redisTlsFromEnv(env: NodeJS.ProcessEnv, url: string | undefined): RedisTls | undefined {
  const flag = env['REDIS_TLS'] || undefined;
  if (flag !== undefined && flag !== 'true' && flag !== 'false')
    throw new Error(`REDIS_TLS must be true or false, got ${JSON.stringify(flag)}`);
  let on = flag === 'true';
  if (url !== undefined) {
    const secure = /^rediss:/i.test(url);
    if (flag !== undefined && on !== secure)
      throw new Error(
        `REDIS_TLS=${flag} contradicts REDIS_URL's scheme: one node is named rediss:// for TLS, redis:// without (REDIS_TLS is for REDIS_CLUSTER_NODES and REDIS_SENTINELS)`,
      );
    on = secure;
  }
  const set = [...FILES.map(([name]) => name), 'REDIS_TLS_SERVERNAME'].filter((name) => env[name]);
  if (!on) {
    if (set.length > 0)
      throw new Error(
        `${set.join(', ')} ${set.length > 1 ? 'are' : 'is'} set but TLS to Redis is off: name the node rediss://, or set REDIS_TLS=true for a Cluster or Sentinel`,
      );
    return undefined;
  }
  if (Boolean(env['REDIS_TLS_CERT_FILE']) !== Boolean(env['REDIS_TLS_KEY_FILE']))
    throw new Error(
      'REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE go together: a client certificate needs its key',
    );
  const tls: RedisTls = { ...TLS_CLIENT_OPTIONS };
  for (const [name, field] of FILES) {
    const file = env[name];
    if (file) tls[field] = readPem(name, file);
  }
  const servername = env['REDIS_TLS_SERVERNAME'];
  if (servername) tls.servername = servername;
  return tls;
}

function readPem(variable: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(
      `${variable}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      {
        cause: error,
      },
    );
  }
}

const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
]);

/**
 * A connection error as an operator can act on it: a TLS mismatch shows only as a reset or an
 * OpenSSL message, so the likely cause and the setting that fixes it are named. `tls`: whether
 * this connection speaks TLS.
 */
export function explainRedisError(error: Error, tls: boolean): string {
  const { code, message } = error as NodeJS.ErrnoException;
  const reset = code === 'ECONNRESET' || code === 'EPIPE';
  if (!tls && reset)
    return `${message}: a Redis that accepts only TLS resets plain connections; if it does, name it rediss:// (one node) or set REDIS_TLS=true (Cluster, Sentinel)`;
  if (tls && /wrong version number|packet length too long|unexpected eof/i.test(message))
    return `${message}: this Redis port speaks plain TCP, not TLS (REDIS_TLS, or rediss://, says otherwise)`;
  // A plain Redis reads a ClientHello as the start of an inline command and waits for its end.
  if (tls && code === 'ETIMEDOUT')
    return `${message}: no answer to the TLS handshake: Redis is unreachable, or this port speaks plain TCP, not TLS (REDIS_TLS, or rediss://, says otherwise)`;
  if (tls && (reset || /certificate required|handshake failure/i.test(message)))
    return `${message}: if Redis requires client certificates (tls-auth-clients), name one with REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE`;
  if (tls && code !== undefined && UNTRUSTED.has(code))
    return `${message}: the server's certificate is not trusted: REDIS_TLS_CA_FILE names the CA that issued it`;
  if (tls && code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return `${message}: the server's certificate does not name the address connected to: REDIS_TLS_SERVERNAME sets the name to check`;
  return message;
}
