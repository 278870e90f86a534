/**
 * Every environment variable Portico's processes read, with its default and meaning: the one
 * list the environment table of docs/configuration.md is written from (`npm run docs:config`).
 * A test fails when code reads a variable this list lacks, when the list names one no code
 * reads, or when the committed table and this list disagree. The benchmark's BENCH_* variables
 * are the benchmark's own (docs/performance.md).
 */

export interface EnvironmentVariable {
  name: string;
  default: string;
  meaning: string;
  /** Set by Portico for its own processes, never by an operator: listed, not in the table. */
  internal?: true;
}

export const ENVIRONMENT_VARIABLES: readonly EnvironmentVariable[] = [
  { name: 'GATEWAY_PORT', default: '8443', meaning: 'HTTPS port of the gateway' },
  {
    name: 'ADMIN_PORT',
    default: '8442',
    meaning:
      "admin listener: the dashboard at `/`, `/healthz`, `/readyz`, `/metrics`, `POST /cache/purge?prefix=`; not 9090, which is Prometheus's own",
  },
  {
    name: 'ADMIN_HOST',
    default: '127.0.0.1',
    meaning: 'where the admin listener binds; open it only on a private network (it can purge the cache)',
  },
  {
    name: 'GATEWAY_WORKERS',
    default: '1',
    meaning:
      'gateway processes sharing the listeners (`auto`: one per core); without Redis, limits are per worker',
  },
  {
    name: 'PORTICO_CONFIG',
    default: 'built-in defaults',
    meaning: 'YAML or JSON config file of the gateway (`npm run -s check -- FILE` judges one)',
  },
  {
    name: 'PORTICO_DATA_DIR',
    default: '`.portico/`',
    meaning:
      'development keys, certificates and CA, embedded database, audit log, admin token, API-key records without Redis',
  },
  {
    name: 'PORTICO_AUDIT_LOG',
    default: '`<data dir>/audit.log`',
    meaning: 'audit log file, `-` for stdout',
  },
  {
    name: 'PORTICO_ADMIN_TOKEN',
    default: 'a token created in the data dir (`admin-token`)',
    meaning: 'bearer token of the admin cache purge (at least 32 characters)',
  },
  {
    name: 'PORTICO_ASSERTION_KEYS',
    default: 'a key created in the data dir',
    meaning: '`kid:base64secret,...` shared by gateway and service (first signs, all verify)',
  },
  {
    name: 'PORTICO_APIKEY_SIGNING_KEYS',
    default: 'a key created in the data dir',
    meaning: '`kid:base64secret,...` signing API keys (first signs, all verify)',
  },
  {
    name: 'PORTICO_INTROSPECTION_CLIENT_SECRET',
    default: 'none',
    meaning:
      "the gateway's client secret at the introspection endpoint (`auth.introspection`, `client_secret_basic`), unless `clientSecretFile` is set",
  },
  {
    name: 'PORTICO_INTROSPECTION_PRIVATE_KEY',
    default: 'none',
    meaning:
      "the gateway's private key (PKCS#8 PEM or private JWK) for `private_key_jwt` at the introspection endpoint, unless `privateKeyFile` is set",
  },
  {
    name: 'GATEWAY_UPSTREAM_CA_FILE',
    default: 'the development CA',
    meaning: 'CA(s) the gateway trusts for the default service route (`proxy.upstreamTls` for others)',
  },
  {
    name: 'GATEWAY_UPSTREAM_CERT_FILE',
    default: 'the development client certificate',
    meaning: 'client certificate the gateway presents to the service (with `GATEWAY_UPSTREAM_KEY_FILE`)',
  },
  {
    name: 'GATEWAY_UPSTREAM_KEY_FILE',
    default: 'the development client key',
    meaning: 'private key of `GATEWAY_UPSTREAM_CERT_FILE`',
  },
  {
    name: 'SERVICE_PORT',
    default: '8081',
    meaning: "the resource service's port; the gateway's default route points to it",
  },
  {
    name: 'SERVICE_HOST',
    default: '127.0.0.1',
    meaning: 'where the resource service binds',
  },
  {
    name: 'SERVICE_TLS_CERT_FILE',
    default: "the development CA's (`<data dir>/tls/internal/`, created on first use)",
    meaning: 'PEM certificate the service serves HTTPS with; reloaded on SIGHUP',
  },
  {
    name: 'SERVICE_TLS_KEY_FILE',
    default: 'the development key',
    meaning: 'private key of `SERVICE_TLS_CERT_FILE`',
  },
  {
    name: 'SERVICE_TLS_CLIENT_CA_FILE',
    default: 'the development CA',
    meaning:
      'PEM CA(s) whose client certificates the service accepts (mutual TLS); several during a rotation. Unset with a certificate: HTTPS without client certificates, warned',
  },
  {
    name: 'SERVICE_PLAIN_HTTP',
    default: '`false`',
    meaning:
      '`true`: the service speaks plain HTTP and the default route follows; an explicit choice, warned about at every start',
  },
  {
    name: 'SERVICE_PROBE_PORT',
    default: 'none',
    meaning: "a plain-HTTP listener for the orchestrator's probes (`/healthz`, `/readyz`)",
  },
  {
    name: 'SERVICE_PROBE_HOST',
    default: '127.0.0.1',
    meaning: 'where the probe listener binds',
  },
  {
    name: 'SERVICE_SHUTDOWN_TIMEOUT_MS',
    default: '10000',
    meaning: "how long the service's SIGTERM drain waits for requests in flight before cutting them",
  },
  {
    name: 'DATABASE_URL',
    default: 'embedded PGlite in the data dir (`npm start` only)',
    meaning: 'PostgreSQL connection string',
  },
  {
    name: 'DATABASE_POOL_MAX',
    default: '10',
    meaning: 'connections per service process',
  },
  {
    name: 'REDIS_URL',
    default: 'none: per-process limits, revocations and invalidations, with a warning',
    meaning: 'Redis (one node; `rediss://` for TLS)',
  },
  {
    name: 'REDIS_CLUSTER_NODES',
    default: 'none',
    meaning: '`host:port,...` seed nodes: Redis Cluster instead of one node ([scaling.md](scaling.md))',
  },
  {
    name: 'REDIS_SENTINELS',
    default: 'none',
    meaning: '`host:port,...` of the sentinels: the master they name, followed across failovers',
  },
  {
    name: 'REDIS_SENTINEL_NAME',
    default: 'none',
    meaning: 'the master group the sentinels watch (required with `REDIS_SENTINELS`)',
  },
  {
    name: 'REDIS_USERNAME',
    default: 'none',
    meaning:
      "ACL user of a cluster's nodes, or of the master and replicas behind Sentinel (with `REDIS_URL`, put it in the URL)",
  },
  {
    name: 'REDIS_PASSWORD',
    default: 'none',
    meaning: 'its password',
  },
  {
    name: 'REDIS_SENTINEL_PASSWORD',
    default: 'none',
    meaning: "the sentinels' own password, when they require one",
  },
  {
    name: 'REDIS_TLS',
    default: '`false` (with `REDIS_URL`: its scheme)',
    meaning: '`true`: TLS to a Cluster or Sentinel ([redis.md](redis.md))',
  },
  {
    name: 'REDIS_TLS_CA_FILE',
    default: "the system's CAs",
    meaning: "PEM CA(s) that issued the Redis servers' certificates",
  },
  {
    name: 'REDIS_TLS_CERT_FILE',
    default: 'none',
    meaning: 'PEM client certificate for a Redis that requires one (with `REDIS_TLS_KEY_FILE`)',
  },
  {
    name: 'REDIS_TLS_KEY_FILE',
    default: 'none',
    meaning: 'private key of `REDIS_TLS_CERT_FILE`',
  },
  {
    name: 'REDIS_TLS_SERVERNAME',
    default: 'the address connected to',
    meaning: "the name the servers' certificates must carry, also sent as SNI",
  },
  {
    name: 'PORTICO_REDIS_PREFIX',
    default: '`portico:`',
    meaning: 'prefix of every Redis key and channel',
  },
  {
    name: 'NODE_ENV',
    default: 'unset (the image sets `production`)',
    meaning:
      '`production`: a route that takes tokens needs a configured issuer (`auth.jwt.jwksUrl`), not the development one',
  },
  {
    name: 'LOG_LEVEL',
    default: '`info`',
    meaning:
      'pino level: `trace`, `debug`, `info`, `warn`, `error`, `fatal`, `silent` (debug adds stacks to start failures)',
  },
  {
    name: 'PORTICO_PRIMARY_PID',
    default: '',
    meaning: "set by the primary for its workers: the primary's pid",
    internal: true,
  },
  {
    name: 'PORTICO_WORKER_SLOT',
    default: '',
    meaning: "set by the primary for its workers: the worker's slot (its audit chain)",
    internal: true,
  },
];

/** The Markdown table of the variables an operator sets (internal ones left out). */
export function environmentTable(): string {
  const cell = (text: string) => text.replaceAll('|', '\\|');
  const rows = ENVIRONMENT_VARIABLES.filter((variable) => variable.internal !== true).map(
    (variable) => `| \`${variable.name}\` | ${cell(variable.default)} | ${cell(variable.meaning)} |`,
  );
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}
