/**
 * The `proxy` config: how the gateway forwards to its upstreams, and the settings that keep a
 * sick or overloaded target from hurting a route (outlier ejection, the retry budget, the
 * circuit breaker; a reload applies them all: it builds new pools).
 */
import { Type, type Static } from '@sinclair/typebox';
import { devPkiFiles } from '../../../shared/dev-pki.ts';
import { trustProxyProblems } from '../../foundation/trust-proxy.ts';
import { defaultServiceOrigin } from './routes.ts';
import { dataDirOf } from '../../../shared/data-dir.ts';

export const OutlierDetectionSchema = Type.Object(
  {
    consecutiveFailures: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 5,
      description:
        'Connection failures, timeouts or 5xx answers in a row from one target that eject it from its route.',
    }),
    baseEjectionMs: Type.Integer({
      minimum: 100,
      default: 10_000,
      description:
        "A target's first ejection lasts this long, its n-th n times as long; each base interval it then " +
        'serves without being ejected takes one off n.',
    }),
    maxEjectionMs: Type.Integer({
      minimum: 100,
      default: 120_000,
      description: 'Longest an ejection lasts, however often the target was ejected.',
    }),
    maxEjectionPercent: Type.Integer({
      minimum: 0,
      maximum: 100,
      default: 50,
      description:
        "Most of a route's targets ejected at once, in percent, rounded down: a route with one target never " +
        'ejects it; with two, at most one at the default.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'Passive health: a target that fails in a row is taken out of its route for a growing, bounded time ' +
      '(logged, and counted in portico_upstream_ejections_total). A reload applies it.',
  },
);

export const RetryBudgetSchema = Type.Object(
  {
    percent: Type.Integer({
      minimum: 0,
      maximum: 100,
      default: 20,
      description: "Retries in flight, as a percentage of the route's requests in flight.",
    }),
    minRetryConcurrency: Type.Integer({
      minimum: 0,
      default: 3,
      description:
        'Retries in flight always allowed, whatever the percentage gives (a quiet route still retries).',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'Caps retries per route, as Envoy does, so that retries cannot multiply an overload: past the budget a ' +
      'failure is answered (502/504) instead of retried. `proxy.retries` still caps retries per request. A reload applies it.',
  },
);

export const CircuitBreakerSchema = Type.Object(
  {
    maxPendingRequests: Type.Integer({
      minimum: 0,
      default: 1024,
      description:
        'Requests per target that may wait for its answer beyond `connectionsPerUpstream`; past it the target ' +
        'takes no more until some are answered.',
    }),
    retryAfterSeconds: Type.Integer({
      minimum: 1,
      maximum: 3600,
      default: 1,
      description: 'Retry-After of the 503 answered when every target of a route is full.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'A cap on the requests waiting for each target: when every target of a route is full, the answer is an ' +
      'immediate 503 problem (ERR_UPSTREAM_OVERLOADED) with Retry-After instead of a queue that grows. A reload applies it.',
  },
);

const RESILIENCE_PROPERTIES = {
  outlierDetection: OutlierDetectionSchema,
  retryBudget: RetryBudgetSchema,
  circuitBreaker: CircuitBreakerSchema,
};

export type OutlierDetection = Static<typeof OutlierDetectionSchema>;
export type RetryBudget = Static<typeof RetryBudgetSchema>;
export type CircuitBreaker = Static<typeof CircuitBreakerSchema>;

/** Checks the schema cannot express, each `path: problem`. */
function checkResilience(proxy: { outlierDetection: OutlierDetection }): string[] {
  const { baseEjectionMs, maxEjectionMs } = proxy.outlierDetection;
  return maxEjectionMs < baseEjectionMs
    ? [`proxy.outlierDetection.maxEjectionMs: must be at least baseEjectionMs (${baseEjectionMs})`]
    : [];
}

/** The `proxy.echoingOrigins` key; by default the resource service on this host. */
function echoingOriginsSchema(env: NodeJS.ProcessEnv) {
  return Type.Array(Type.String({ format: 'uri' }), {
    default: [defaultServiceOrigin(env)],
    description:
      'Origins that echo the Portico-Exchange-Id request header in every answer, as the resource service does. ' +
      'An answer from one of them that does not carry the id of the request it answers (a stray answer left on a ' +
      'keep-alive connection) is a 502 and its connection is dropped. A list replaces the default (the resource ' +
      'service): list it too to keep it.',
  });
}

/** RFC 1123 host names, for the server name an upstream's certificate must carry. */
const HOST_NAME =
  '^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$';

export const UpstreamTlsSchema = Type.Object(
  {
    origin: Type.String({
      description: 'The https: origin (scheme, host, port) these settings apply to, as a route names it.',
    }),
    caFile: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'PEM file of the CAs trusted for this upstream (several certificates for a CA rotation); the system CAs when omitted.',
      }),
    ),
    certFile: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'PEM client certificate presented to the upstream (mutual TLS).',
      }),
    ),
    keyFile: Type.Optional(
      Type.String({ minLength: 1, description: 'PEM private key of `certFile`; required with it.' }),
    ),
    serverName: Type.Optional(
      Type.String({
        pattern: HOST_NAME,
        description:
          "Name the upstream's certificate must carry, and sent as SNI; the origin's host when omitted.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type UpstreamTls = Static<typeof UpstreamTlsSchema>;

/**
 * The TLS settings of the default service origin: GATEWAY_UPSTREAM_* files, or the data dir's
 * development CA and client certificate (created at start), so that the hop is mutual TLS with
 * nothing configured. None when SERVICE_PLAIN_HTTP=true asks for plain HTTP.
 */
export function defaultUpstreamTls(env: NodeJS.ProcessEnv): UpstreamTls[] {
  if (env['SERVICE_PLAIN_HTTP'] === 'true') return [];
  const dev = devPkiFiles(dataDirOf(env));
  const pick = (name: string, fallback: string) => env[name] || fallback;
  return [
    {
      origin: defaultServiceOrigin(env),
      caFile: pick('GATEWAY_UPSTREAM_CA_FILE', dev.caFile),
      certFile: pick('GATEWAY_UPSTREAM_CERT_FILE', dev.clientCertFile),
      keyFile: pick('GATEWAY_UPSTREAM_KEY_FILE', dev.clientKeyFile),
    },
  ];
}

/** The `proxy` schema; the default service origin's TLS comes from `env`. */
export function createProxyConfigSchema(env: NodeJS.ProcessEnv) {
  return Type.Object(
    {
      ...PROXY_PROPERTIES,
      upstreamTls: Type.Array(UpstreamTlsSchema, {
        default: defaultUpstreamTls(env),
        description:
          'TLS of https: upstreams, one entry per origin: CAs to trust, client certificate to present, server name. ' +
          'A list replaces the default entry (the resource service, mutual TLS with GATEWAY_UPSTREAM_CA_FILE, ' +
          "_CERT_FILE, _KEY_FILE or the data dir's development CA). Certificate files are re-read when they change.",
      }),
      echoingOrigins: echoingOriginsSchema(env),
    },
    { additionalProperties: false, default: {}, description: 'Upstream forwarding.' },
  );
}

const PROXY_PROPERTIES = {
  trustProxy: Type.Union(
    [
      Type.Boolean(),
      Type.Integer({ minimum: 1, maximum: 16 }),
      Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
    ],
    {
      default: false,
      description:
        'Whose forwarding headers are believed. false: none; Forwarded and X-Forwarded-* from the client are ' +
        "replaced with what this gateway saw, and the connection's source is the client. A list of the " +
        "proxies' addresses or CIDRs: from them, the incoming values are kept (this hop appended) and the " +
        'client is the first X-Forwarded-For address from the right that is not a listed proxy. A hop count N: ' +
        'every connection comes through N proxies; the client is the Nth address from the right. true (anyone) ' +
        'is refused: a client could name a new address per request and dodge per-address limits.',
    },
  ),
  viaName: Type.String({
    // A token (RFC 9110 section 7.6.3 pseudonym), optionally with a port.
    pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+(?::[0-9]{1,5})?$",
    maxLength: 64,
    default: 'portico',
    description:
      "This gateway's name in the Via field it appends to every forwarded request and relayed answer " +
      '(e.g. `1.1 portico`, `2 portico` for a request that came over HTTP/2), after the entries already there. ' +
      'A pseudonym keeps internal host names out of it.',
  }),
  connectionsPerUpstream: Type.Integer({
    minimum: 1,
    default: 128,
    description: 'Most connections the pool opens to one upstream target (origin).',
  }),
  connectTimeoutMs: Type.Integer({
    minimum: 1,
    default: 5000,
    description: 'Time to open an upstream connection before answering 504.',
  }),
  responseTimeoutMs: Type.Integer({
    minimum: 1,
    default: 30000,
    description: 'Time for the upstream to send its response headers before answering 504.',
  }),
  bodyTimeoutMs: Type.Integer({
    minimum: 1,
    default: 30000,
    description:
      'Longest pause between two chunks of the upstream response body; past it the response is cut.',
  }),
  keepAliveTimeoutMs: Type.Integer({
    minimum: 1,
    default: 4000,
    description: 'How long an idle upstream connection is kept (the upstream may announce less).',
  }),
  retries: Type.Integer({
    minimum: 0,
    maximum: 3,
    default: 1,
    description:
      'Retries after a connection failure, only for idempotent methods without a request body ' +
      '(a streamed body cannot be replayed without buffering it): on another target when the route has ' +
      'several, also after a 503 (whose Retry-After keeps that target out meanwhile); within `retryBudget`.',
  }),
  ...RESILIENCE_PROPERTIES,
};

/** `proxy` with an empty environment's defaults (for code that only needs its type). */
export const ProxyConfigSchema = createProxyConfigSchema({});
export type ProxyConfig = Static<typeof ProxyConfigSchema>;

/**
 * Checks the schema cannot express, each `path: problem`: an origin that is an https: origin
 * and named once, a certificate with its key.
 */
export function checkProxyConfig(proxy: ProxyConfig): string[] {
  const problems: string[] = [...trustProxyProblems(proxy.trustProxy), ...checkResilience(proxy)];
  const seen = new Set<string>();
  proxy.upstreamTls.forEach((entry, index) => {
    const at = `proxy.upstreamTls[${index}]`;
    let url: URL | undefined;
    try {
      url = new URL(entry.origin);
    } catch {
      problems.push(`${at}.origin: must be a URL`);
    }
    if (url !== undefined) {
      if (url.protocol !== 'https:') problems.push(`${at}.origin: must be an https: origin`);
      else if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '')
        problems.push(`${at}.origin: must be an origin only (scheme, host, port)`);
      if (seen.has(url.origin)) problems.push(`${at}.origin: ${url.origin} has settings already`);
      seen.add(url.origin);
    }
    if ((entry.certFile === undefined) !== (entry.keyFile === undefined))
      problems.push(
        `${at}.${entry.certFile === undefined ? 'certFile' : 'keyFile'}: is required with ${entry.certFile === undefined ? 'keyFile' : 'certFile'}`,
      );
  });
  return problems;
}
