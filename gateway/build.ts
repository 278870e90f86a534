/**
 * Builds one gateway's request handler and the components behind it (upstream pools, rate
 * limiter, authenticator, cache, audit log, metrics), without listening anywhere: start.ts
 * puts listeners in front of it, and tests mount the same handler on a socket of their own,
 * with a stand-in for a stage by name where a real one needs what they lack.
 *
 * Every component registers its close on the lifecycle as it is created, so that a start
 * that fails later closes exactly what was built, and a drain closes it in reverse. What a
 * config reload rebuilds (the pipeline: routes, upstream pools, authenticator, stages) is one
 * generation with a lifecycle of its own (live-handler.ts swaps it); what outlives a reload
 * is built once (Shared, below, says why each).
 */
import type { RedisClient } from '../shared/redis.ts';
import type { Logger } from 'pino';
import type { AssertionKey } from '../shared/identity-assertion.ts';
import { Lifecycle } from '../shared/lifecycle.ts';
import { readinessChecks } from './admin/readiness-checks.ts';
import type { ReadinessCheck } from './admin/server.ts';
import { createAuditLog, type AuditLog } from './audit/audit-log.ts';
import type { HttpCache } from './cache/engine/http-cache.ts';
import { buildCache } from './build-cache.ts';
import { registerCacheMetrics } from './cache/metrics.ts';
import { gatewayOnlyFields } from './cache/rules/gateway-fields.ts';
import type { GatewayConfig } from './config/schema/gateway.ts';
import { createClientIp } from './edge/client-ip.ts';
import { createAuthenticator, type Authenticator } from './identity/authenticate.ts';
import {
  createDeprecatedCallCounter,
  type DeprecatedCallCounter,
} from './observability/deprecation-metrics.ts';
import { createMetrics, type GatewayMetrics } from './observability/metrics.ts';
import {
  createOtlpExporter,
  registerExportMetrics,
  type SpanExporter,
} from './observability/otlp-exporter.ts';
import { createRequestAccounting, type RequestAccounting } from './observability/request-accounting.ts';
import { createLiveHandler, type PipelineGeneration } from './pipeline/live-handler.ts';
import { createResilienceMetrics, type ResilienceMetrics } from './upstream/resilience-metrics.ts';
import { compose } from './pipeline/compose.ts';
import { createRequestHandler, type RequestHandler } from './edge/request-handler.ts';
import { createRateLimiter, type RateLimiter } from './rate-limit/limiter.ts';
import { createStoreFailureLog } from './rate-limit/store-failure-log.ts';
import { createStages, type StageOverrides } from './stages.ts';
import { createForward } from './upstream/forward.ts';
import { closePools, createUpstreams, type Upstreams } from './upstream/pools.ts';
import { createRouteUpstreams, type RouteUpstreams } from './upstream/route-upstreams.ts';
import { routeTargets } from './config/schema/routes.ts';
import { createWebSocketMetrics, type WebSocketMetrics } from './websocket/metrics.ts';
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
  /** The current pipeline's upstream pools (a reload replaces them). */
  readonly upstreams: Upstreams;
  /** Each route's targets, with their ejection and health state (the current pipeline's). */
  readonly routeUpstreams: RouteUpstreams;
  readonly authenticator: Authenticator | undefined;
  /** Present when an audit log path was given; the listener records its raw refusals here. */
  audit?: AuditLog;
  /** The config the current pipeline was built from. */
  readonly config: GatewayConfig;
  readinessChecks(): ReadinessCheck[];
  /** The pipeline's stages, in the order requests pass them (the dashboard shows them). */
  readonly stageNames: readonly string[];
  /** Every open WebSocket, of whichever pipeline opened it: a drain closes them first (start.ts). */
  websockets: { closeAll(): Promise<void>; readonly size: number };
  /**
   * Builds a new pipeline from `next` and swaps it in: requests in flight finish on the old
   * one, which closes once they have. A build that fails throws, and the running one stays.
   * `drained` settles when the old pipeline has closed.
   */
  reconfigure(next: GatewayConfig): Promise<{ drained: Promise<void> }>;
  /** Closes every component, last built first. */
  close(): Promise<void>;
}

/** How long in-flight upstream requests may take to finish once a drain reaches the pools. */
const POOL_CLOSE_GRACE_MS = 2000;

/**
 * What outlives a reload, built once per gateway, each for its reason:
 * - the metrics registry: counters must run on across a reload, and a series registered twice
 *   is an error;
 * - the rate limiter: the counts of the current windows (reconfigure() swaps its policies);
 * - the cache and its invalidation subscriber: the stored answers (the `cache` section needs a
 *   restart, so they never meet settings other than their own);
 * - the audit log: one writer per file, or its hash chain would fork;
 * - the span exporter: its queue and connection (`tracing.otlp` needs a restart);
 * - the request accounting, resilience and deprecation metrics: they write to the registry;
 * - Redis (deps.redis): the process's connection, never ours to close.
 */
interface Shared {
  metrics: GatewayMetrics;
  limiter: RateLimiter;
  cache: HttpCache;
  audit?: AuditLog;
  spanExporter?: SpanExporter;
  resilience: ResilienceMetrics;
  countDeprecatedCall: DeprecatedCallCounter;
  accounting: RequestAccounting;
  websockets: WebSocketFleet;
}

/**
 * The WebSockets of every pipeline: each pipeline dials with its own routes, but a relay
 * outlives the pipeline that opened it (it uses no pool of it), so a reload never cuts one;
 * a drain closes them all. The metrics are made once, on the first route that takes them.
 */
class WebSocketFleet {
  readonly #registry: GatewayMetrics['registry'];
  readonly #all = new Set<WebSockets>();
  readonly #retired = new Set<WebSockets>();
  #metrics: WebSocketMetrics | undefined;

  constructor(registry: GatewayMetrics['registry']) {
    this.#registry = registry;
  }

  get size(): number {
    return [...this.#all].reduce((sum, websockets) => sum + websockets.size, 0);
  }

  add(deps: Omit<ConstructorParameters<typeof WebSockets>[0], 'metrics'>): WebSockets {
    this.#metrics ??= createWebSocketMetrics(this.#registry);
    const websockets = new WebSockets({ ...deps, metrics: this.#metrics });
    this.#all.add(websockets);
    return websockets;
  }

  /** A retired pipeline's: forgotten once its last relay has ended (checked at each build). */
  retire(websockets: WebSockets): void {
    this.#retired.add(websockets);
    this.prune();
  }

  prune(): void {
    for (const websockets of this.#retired)
      if (websockets.size === 0) {
        this.#retired.delete(websockets);
        this.#all.delete(websockets);
      }
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.#all].map((websockets) => websockets.closeAll()));
  }
}

/** What one config builds, and a reload rebuilds: each closes with its generation. */
interface Generation extends PipelineGeneration {
  config: GatewayConfig;
  upstreams: Upstreams;
  routeUpstreams: RouteUpstreams;
  authenticator?: Authenticator;
  stageNames: readonly string[];
}

export async function buildGateway(
  config: GatewayConfig,
  deps: BuildDeps,
  options: BuildOptions = {},
  lifecycle = new Lifecycle(),
): Promise<BuiltGateway> {
  const { log } = deps;
  const shared = await buildShared(config, deps, options, lifecycle, () => live.current());
  const live = createLiveHandler(await buildGeneration(config, shared, deps, options), (error) =>
    log.error({ err: error }, 'closing a replaced pipeline failed'),
  );
  lifecycle.defer('pipeline', () => live.close());
  const { metrics, limiter, cache, audit } = shared;

  return {
    handler: live.handle,
    metrics,
    limiter,
    cache,
    get upstreams() {
      return live.current().upstreams;
    },
    get routeUpstreams() {
      return live.current().routeUpstreams;
    },
    get authenticator() {
      return live.current().authenticator;
    },
    ...(audit === undefined ? {} : { audit }),
    websockets: shared.websockets,
    get config() {
      return live.current().config;
    },
    get stageNames() {
      return live.current().stageNames;
    },
    readinessChecks: () => {
      const { upstreams, routeUpstreams, authenticator } = live.current();
      return readinessChecks({
        upstreams,
        routeUpstreams,
        ...(authenticator === undefined ? {} : { authenticator }),
        ...(deps.redis === undefined ? {} : { redis: deps.redis }),
        rateLimitStore: () => limiter.status(),
        ...(deps.readinessChecks === undefined ? {} : { extra: deps.readinessChecks }),
      });
    },
    async reconfigure(next) {
      const generation = await buildGeneration(next, shared, deps, options);
      // Only once the new pipeline stands: a build that failed has changed nothing.
      limiter.reconfigure(next.rateLimits);
      return { drained: live.swap(generation) };
    },
    close: () => lifecycle.close(),
  };
}

async function buildShared(
  config: GatewayConfig,
  deps: BuildDeps,
  options: BuildOptions,
  lifecycle: Lifecycle,
  current: () => Generation,
): Promise<Shared> {
  const { log } = deps;
  const metrics = createMetrics({ processMetrics: deps.processMetrics ?? false });
  const limiter = createRateLimiter(config.rateLimits, {
    redis: deps.redis,
    storeFailureLog: createStoreFailureLog(log),
    log,
  });
  lifecycle.defer('rate limiter', () => limiter.close());
  metrics.watchRateLimiter(() => limiter.status());
  const cache = await buildCache(
    config.cache,
    { redis: deps.redis, log: deps.log, now: options.now },
    lifecycle,
  );
  registerCacheMetrics(metrics.registry, cache);
  const audit =
    deps.auditLogPath === undefined
      ? undefined
      : createAuditLog({ path: deps.auditLogPath, logger: log, registry: metrics.registry });
  if (audit !== undefined) lifecycle.defer('audit log', () => audit.close());
  const { endpoint } = config.tracing.otlp;
  const spanExporter =
    endpoint === undefined ? undefined : createOtlpExporter({ ...config.tracing.otlp, endpoint }, log);
  if (spanExporter !== undefined) {
    registerExportMetrics(metrics.registry, spanExporter);
    lifecycle.defer('span exporter', () => spanExporter.close());
  }
  return {
    metrics,
    limiter,
    cache,
    ...(audit === undefined ? {} : { audit }),
    ...(spanExporter === undefined ? {} : { spanExporter }),
    // The rotation gauge reads the current pipeline's targets when scraped.
    resilience: createResilienceMetrics(metrics.registry, () => current().routeUpstreams.sets),
    countDeprecatedCall: createDeprecatedCallCounter(metrics.registry),
    accounting: createRequestAccounting({ metrics, log, ...(audit === undefined ? {} : { audit }) }),
    websockets: new WebSocketFleet(metrics.registry),
  };
}

/**
 * One pipeline from one config: upstream pools and their health checks, the authenticator
 * (its key source and API-key store), the stages and the handler. A build that fails closes
 * what it had opened and throws.
 */
function buildGeneration(
  config: GatewayConfig,
  shared: Shared,
  deps: BuildDeps,
  options: BuildOptions,
): Promise<Generation> {
  const { log } = deps;
  const { metrics } = shared;
  // Synchronous, but started by the lifecycle, so that a throw closes what was opened.
  return new Lifecycle().start((lifecycle) => {
    const upstreams = createUpstreams(
      config.routes.flatMap((route) => routeTargets(route).map((target) => target.url)),
      config.proxy,
    );
    lifecycle.defer('upstream pools', () => closePools(upstreams, POOL_CLOSE_GRACE_MS));
    // Deferred after the pools, so closed before them: no health check starts on a closed pool.
    const routeUpstreams = createRouteUpstreams(config.routes, upstreams, config.proxy, {
      log,
      registry: metrics.registry,
      metrics: shared.resilience,
    });
    lifecycle.defer('upstream health checks', () => routeUpstreams.close());
    const authenticator = needsAuthenticator(config, options)
      ? createAuthenticator(config.auth, { ...authDeps(deps), registry: metrics.registry })
      : undefined;
    if (authenticator !== undefined) lifecycle.defer('authenticator', () => authenticator.close());
    shared.websockets.prune();
    const websockets = config.routes.some((route) => route.websocket !== undefined)
      ? shared.websockets.add({
          dial: createDial(config.proxy, { routes: routeUpstreams, assertionKeys: deps.assertionKeys }),
          record: shared.audit === undefined ? undefined : (entry) => shared.audit?.record(entry),
          log,
        })
      : undefined;
    if (websockets !== undefined) lifecycle.defer('websockets', () => shared.websockets.retire(websockets));

    const forward = createForward(config.proxy, {
      routes: routeUpstreams,
      metrics,
      maxBodyBytes: config.listener.limits.maxBodyBytes,
      ...(deps.assertionKeys === undefined ? {} : { assertionKeys: deps.assertionKeys }),
    });
    const stages = createStages(
      config,
      {
        forward,
        limiter: shared.limiter,
        cache: shared.cache,
        countDeprecatedCall: shared.countDeprecatedCall,
        ...(authenticator === undefined ? {} : { authenticator }),
        ...(shared.spanExporter === undefined ? {} : { spanExporter: shared.spanExporter }),
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
      accounting: shared.accounting,
      ...(deps.answerHeaders === undefined ? {} : { answerHeaders: deps.answerHeaders }),
      // The targeted fields this cache obeys are ours alone too (RFC 9213), on every route.
      gatewayFields: gatewayOnlyFields(config.cache.targetedFields),
    });
    return Promise.resolve({
      config,
      handle: handler,
      upstreams,
      routeUpstreams,
      ...(authenticator === undefined ? {} : { authenticator }),
      stageNames: stages.map((named) => named.name),
      close: () => lifecycle.close(),
    });
  });
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
    // The replicas' shared ring: DPoP nonces issued by one are good at every other.
    ...(deps.assertionKeys === undefined ? {} : { assertionKeys: deps.assertionKeys }),
  };
}
