/**
 * One rung of the cost ladder (ladder.ts) as a process: the product's startGateway, with the
 * rung's stages left out and its config, on the static upstream. SIGTERM drains and exits.
 *
 *   node measure/bench/ladder-gateway.ts '{"rung": 2, "port": ..., ...}'
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { loadAssertionKeys } from '../../shared/assertion-keys.ts';
import { createRedisClient, waitForRedis } from '../../shared/redis.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { createLogger } from '../../gateway/observability/logger.ts';
import type { Stage } from '../../gateway/pipeline/context.ts';
import { startGateway } from '../../gateway/start.ts';
import type { StageOverrides } from '../../gateway/stages.ts';
import { RUNGS } from './ladder.ts';

export interface LadderGatewayOptions {
  rung: number;
  port: number;
  adminPort: number;
  upstream: string;
  certFile: string;
  keyFile: string;
  /** The bench's data dir: the development issuer that signs its token, the assertion key. */
  dataDir: string;
  redisUrl: string;
  redisPrefix: string;
  auditLog: string;
  /** The client side of mutual TLS to an https: upstream. */
  upstreamTls?: { caFile: string; certFile: string; keyFile: string };
  /** Where spans go when the rung exports them (an OTLP/HTTP traces URL). */
  otlpEndpoint?: string;
}

const options = JSON.parse(process.argv[2] ?? '{}') as LadderGatewayOptions;
const rung = RUNGS[options.rung];
if (rung === undefined) throw new Error(`no ladder rung ${options.rung}`);

const introspection = rung.introspection === true ? await startStubIntrospection() : undefined;

const { config } = parseConfig({
  ...(introspection === undefined ? {} : { auth: { introspection } }),
  listener: { tls: { certFile: options.certFile, keyFile: options.keyFile } },
  admin: { stageTiming: rung.stageTiming },
  ...(options.otlpEndpoint === undefined ? {} : { tracing: { otlp: { endpoint: options.otlpEndpoint } } }),
  ...(options.upstreamTls === undefined
    ? {}
    : { proxy: { upstreamTls: [{ origin: new URL(options.upstream).origin, ...options.upstreamTls }] } }),
  routes: [
    { prefix: '/v1', upstream: options.upstream, auth: rung.auth ? 'required' : 'none', cache: rung.cache },
  ],
  rateLimits: {
    ...(rung.rateLimit === 'none'
      ? {}
      : { policies: [{ name: 'bench', key: 'principal', limit: 1_000_000_000, window: '60s' }] }),
    // A proof is a new credential, counted before it is verified and given back after: the
    // bench's 32 in flight from one address must not reach the failed-auth limit (20).
    ...(rung.dpop === true ? { authFailures: { limit: 1_000_000_000 } } : {}),
  },
});

const overrides: StageOverrides = {};
for (const name of rung.without) overrides[name] = null;
if (rung.without.includes('route')) {
  // The proxy needs the route it forwards to: set it, at no cost worth measuring.
  const only = config.routes[0]!;
  const fixedRoute: Stage = (ctx, next) => {
    ctx.upstream.route = only;
    return next();
  };
  overrides.route = fixedRoute;
}

let redis: Redis | undefined;
// DPoP proofs are remembered in Redis, where every replica sees them, as in production.
if (rung.rateLimit === 'redis' || rung.dpop === true) {
  redis = createRedisClient({ url: options.redisUrl, keyPrefix: options.redisPrefix });
  if (!(await waitForRedis(redis, 5000))) throw new Error(`Redis at ${options.redisUrl} not ready`);
}

const gateway = await startGateway(
  config,
  {
    log: createLogger({ level: rung.accounting ? 'info' : 'warn' }),
    port: options.port,
    adminPort: options.adminPort,
    processMetrics: true,
    dataDir: options.dataDir,
    ...(rung.accounting ? { auditLogPath: options.auditLog } : {}),
    ...(redis === undefined ? {} : { redis }),
    assertionKeys: loadAssertionKeys({}, options.dataDir),
  },
  { stages: overrides },
);

/**
 * An introspection endpoint that calls every token active for the bench's customer: what is
 * measured is the gateway's cached answer, not an identity provider.
 */
async function startStubIntrospection() {
  const server = createServer((req, res) => {
    req.resume();
    res.setHeader('content-type', 'application/json');
    const now = Math.floor(Date.now() / 1000);
    res.end(
      JSON.stringify({
        active: true,
        iss: 'https://bench.idp',
        aud: 'https://bench.api',
        client_id: 'bench',
        customer_id: 'cust-1',
        scope: 'orders:read orders:write',
        token_type: 'Bearer',
        iat: now,
        exp: now + 3600,
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  process.env['PORTICO_INTROSPECTION_CLIENT_SECRET'] = 'bench-secret';
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/introspect`,
    issuer: 'https://bench.idp',
    audience: 'https://bench.api',
    clientId: 'bench-gateway',
    cacheMaxSeconds: 3600,
  };
}

process.once('SIGTERM', () => {
  void gateway
    .close()
    .then(() => redis?.quit())
    .finally(() => process.exit(0));
});
