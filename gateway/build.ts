/**
 * Builds one gateway's request handler and the components behind it (upstream pools, rate
 * limiter, authenticator, cache, audit log, metrics), without listening anywhere: start.ts
 * puts listeners in front of it, and tests mount the same handler on a socket of their own,
 * with a stand-in for a stage by name where a real one needs what they lack.
 *
 * Every component registers its close on the lifecycle as it is created, so that a start
 * that fails later closes exactly what was built, and a drain closes it in reverse.
 */
import { createSubscriber, type RedisClient } from '../shared/redis.ts';
import type { Logger } from 'pino';
import type { AssertionKey } from '../shared/identity-assertion.ts';
import { CACHE_INVALIDATES, GATEWAY_CACHE_CONTROL } from '../shared/cache-headers.ts';
import { Lifecycle } from '../shared/lifecycle.ts';
import { readinessChecks } from './admin/readiness-checks.ts';
import type { ReadinessCheck } from './admin/server.ts';
import { createAuditLog, type AuditLog } from './audit/audit-log.ts';
import { createHttpCache, type HttpCache } from './cache/engine/http-cache.ts';
import { registerCacheMetrics } from './cache/metrics.ts';
import type { GatewayConfig } from './config/schema/gateway.ts';
import { createClientIp } from './edge/client-ip.ts';
import { createAuthenticator, type Authenticator } from './identity/authenticate.ts';
import { createDeprecatedCallCounter } from './observability/deprecation-metrics.ts';
import { createMetrics, type GatewayMetrics } from './observability/metrics.ts';
import { createOtlpExporter, registerExportMetrics } from './observability/otlp-exporter.ts';
import { createRequestAccounting } from './observability/request-accounting.ts';
import { compose } from './pipeline/compose.ts';
import { createRequestHandler, type RequestHandler } from './edge/request-handler.ts';
import { createRateLimiter, type RateLimiter } from './rate-limit/limiter.ts';
import { createStoreFailureLog } from './rate-limit/store-failure-log.ts';
import { createStages, type StageOverrides } from './stages.ts';
import { createForward } from './upstream/forward.ts';
import { createUpstreams, type Upstreams } from './upstream/pools.ts';
import { createRouteUpstreams, type RouteUpstreams } from './upstream/route-upstreams.ts';
import { routeTargets } from './config/schema/routes.ts';
import { createWebSocketMetrics } from './websocket/metrics.ts';
import { createDial } from './websocket/upstream-dial.ts';
import { WebSockets } from './websocket/websockets.ts';

export interface BuildDeps {
  log: Logger;
  assertionKeys?: readonly AssertionKey[];
  /** Readiness checks of the process (besides upstreams, identity keys and Redis). */
  readinessChecks?: readonly ReadinessCheck[];
  /** Process metrics (CPU, memory, event loop) in /metrics; off for in-process tests. */
  processMetrics?: boolean;
  /** Development issuer and, without Redis, API-key records. Needed when a route requires auth. */
  dataDir?: string;
  /** Shared limits, revocations and invalidations; without it all of these are per process. */
  redis?: RedisClient;
  /** Audit log file, `-` for stdout; no audit log when absent (in-process tests). */
  auditLogPath?: string;
  /** Read for the API-key signing keys; process.env by default. */
  env?: NodeJS.ProcessEnv;
  /** Fields on every answer of the handler (start.ts: the listener's HSTS and nosniff). */
  answerHeaders?: Readonly<Record<string, string>>;
}

export interface BuildOptions {
  /** Stages replaced by name (tests: a stand-in authenticate stage, say). */
  stages?: StageOverrides;
  /** Milliseconds since the epoch as the cache reads them; tests advance it. */
  now?: () => number;
}

export interface BuiltGateway {
  handler: RequestHandler;
  metrics: GatewayMetrics;
  limiter: RateLimiter;
  cache: HttpCache;
  upstreams: Upstreams;
  /** Each route's targets, with their ejection and health state. */
  routeUpstreams: RouteUpstreams;
  authenticator?: Authenticator;
  /** Present when an audit log path was given; the listener records its raw refusals here. */
  audit?: AuditLog;
  readinessChecks(): ReadinessCheck[];
  /** Present when a route takes WebSockets: a drain closes them first (start.ts). */
  websockets?: WebSockets;
  /** The pipeline's stages, in the order requests pass them (the dashboard shows them). */
  stageNames: readonly string[];
  /** Closes every component, last built first. */
  close(): Promise<void>;
}

/** How long in-flight upstream requests may take to finish once a drain reaches the pools. */
const POOL_CLOSE_GRACE_MS = 2000;

export async function buildGateway(
  config: GatewayConfig,
  deps: BuildDeps,
  options: BuildOptions = {},
  lifecycle = new Lifecycle(),
): Promise<BuiltGateway> {
  const { log } = deps;
  const metrics = createMetrics({ processMetrics: deps.processMetrics ?? false });
  const upstreams = createUpstreams(
    config.routes.flatMap((route) => routeTargets(route).map((target) => target.url)),
    config.proxy,
  );
  lifecycle.defer('upstream pools', () => closePools(upstreams));
  // Deferred after the pools, so closed before them: no health check starts on a closed pool.
  const routeUpstreams = createRouteUpstreams(config.routes, upstreams, config.proxy, {
    log,
    registry: metrics.registry,
  });
  lifecycle.defer('upstream health checks', () => routeUpstreams.close());
  const limiter = createRateLimiter(config.rateLimits, {
    redis: deps.redis,
    storeFailureLog: createStoreFailureLog(log),
  });
  lifecycle.defer('rate limiter', () => limiter.close());
  metrics.watchRateLimiter(() => limiter.status());
  const authenticator = needsAuthenticator(config, options)
    ? createAuthenticator(config.auth, authDeps(deps))
    : undefined;
  if (authenticator !== undefined) lifecycle.defer('authenticator', () => authenticator.close());
  const cache = await buildCache(config, deps, options, lifecycle);
  registerCacheMetrics(metrics.registry, cache);
  const audit =
    deps.auditLogPath === undefined
      ? undefined
      : createAuditLog({ path: deps.auditLogPath, logger: log, registry: metrics.registry });
  if (audit !== undefined) lifecycle.defer('audit log', () => audit.close());

  const forward = createForward(config.proxy, {
    routes: routeUpstreams,
    metrics,
    maxBodyBytes: config.listener.limits.maxBodyBytes,
    ...(deps.assertionKeys === undefined ? {} : { assertionKeys: deps.assertionKeys }),
  });
  const websockets = config.routes.some((route) => route.websocket !== undefined)
    ? new WebSockets({
        dial: createDial(config.proxy, { routes: routeUpstreams, assertionKeys: deps.assertionKeys }),
        metrics: createWebSocketMetrics(metrics.registry),
        record: audit === undefined ? undefined : (entry) => audit.record(entry),
        log,
      })
    : undefined;
  // Deferred after the audit log, so closed before it: their close records are written.
  if (websockets !== undefined) lifecycle.defer('websockets', () => websockets.closeAll());
  const { endpoint } = config.tracing.otlp;
  const spanExporter =
    endpoint === undefined ? undefined : createOtlpExporter({ ...config.tracing.otlp, endpoint }, log);
  if (spanExporter !== undefined) {
    registerExportMetrics(metrics.registry, spanExporter);
    lifecycle.defer('span exporter', () => spanExporter.close());
  }
  const stages = createStages(
    config,
    {
      forward,
      limiter,
      cache,
      countDeprecatedCall: createDeprecatedCallCounter(metrics.registry),
      ...(authenticator === undefined ? {} : { authenticator }),
      ...(spanExporter === undefined ? {} : { spanExporter }),
      ...(websockets === undefined ? {} : { websockets }),
    },
    options.stages,
  );
  const handler = createRequestHandler({
    run: compose(
      stages,
      config.admin.stageTiming ? metrics.stageTimer(stages.map((named) => named.name)) : undefined,
    ),
    log,
    clientIpOf: createClientIp(config.proxy.trustProxy),
    accounting: createRequestAccounting({ metrics, log, ...(audit === undefined ? {} : { audit }) }),
    ...(deps.answerHeaders === undefined ? {} : { answerHeaders: deps.answerHeaders }),
    // The targeted fields this cache obeys are ours alone too (RFC 9213), on every route.
    gatewayFields: [...new Set([GATEWAY_CACHE_CONTROL, CACHE_INVALIDATES, ...config.cache.targetedFields])],
  });

  return {
    handler,
    metrics,
    limiter,
    cache,
    upstreams,
    routeUpstreams,
    ...(authenticator === undefined ? {} : { authenticator }),
    ...(audit === undefined ? {} : { audit }),
    ...(websockets === undefined ? {} : { websockets }),
    stageNames: stages.map((named) => named.name),
    readinessChecks: () =>
      readinessChecks({
        upstreams,
        routeUpstreams,
        ...(authenticator === undefined ? {} : { authenticator }),
        ...(deps.redis === undefined ? {} : { redis: deps.redis }),
        rateLimitStore: () => limiter.status(),
        ...(deps.readinessChecks === undefined ? {} : { extra: deps.readinessChecks }),
      }),
    close: () => lifecycle.close(),
  };
}

/** A stand-in authenticate stage needs no authenticator; routes without auth need none. */
function needsAuthenticator(config: GatewayConfig, options: BuildOptions): boolean {
  return (
    options.stages?.authenticate === undefined && config.routes.some((route) => route.auth === 'required')
  );
}

function authDeps(deps: BuildDeps) {
  if (deps.dataDir === undefined)
    throw new Error('a route requires authentication: the gateway needs a data dir');
  return {
    dataDir: deps.dataDir,
    logger: deps.log,
    ...(deps.redis === undefined ? {} : { redis: deps.redis }),
    ...(deps.env === undefined ? {} : { env: deps.env }),
  };
}

async function buildCache(
  config: GatewayConfig,
  deps: BuildDeps,
  options: BuildOptions,
  lifecycle: Lifecycle,
): Promise<HttpCache> {
  const { redis, log } = deps;
  // A subscriber connection can only listen: invalidations need a second one. ioredis does
  // not prefix channel names, so the deployment's key prefix goes into the channel itself.
  const subscriber = redis === undefined ? undefined : createSubscriber(redis);
  if (subscriber !== undefined)
    lifecycle.defer('cache invalidation subscriber', () => subscriber.disconnect());
  const cache = createHttpCache(config.cache, {
    redis: redis === undefined || subscriber === undefined ? undefined : { publisher: redis, subscriber },
    channel: `${redis?.options.keyPrefix ?? 'portico:'}cache-invalidation`,
    log,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  lifecycle.defer('cache', () => cache.close());
  // Until it hears invalidations the cache neither serves nor stores; give it a moment.
  if (redis !== undefined && !(await cache.whenReady(2000))) {
    log.warn('cache invalidation channel not subscribed yet: the cache is bypassed until it is');
  }
  return cache;
}

/**
 * Lets upstream requests still running finish (background revalidations; the client-facing
 * ones ended with the listener's drain), then cuts what remains.
 */
async function closePools(upstreams: Upstreams): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    upstreams.close().then(() => true),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), POOL_CLOSE_GRACE_MS))),
  ]);
  clearTimeout(timer);
  if (!closed) await upstreams.destroy();
}
