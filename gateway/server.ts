/**
 * Assembles one gateway instance: HTTPS listener, the stage pipeline, upstream pools, the
 * admin listener and the optional redirect listener. Tests start it in-process on port 0;
 * main.ts starts it from the environment and wires the signals.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { CACHE_INVALIDATES, GATEWAY_CACHE_CONTROL } from '../shared/cache-headers.ts';
import { HttpProblem, sendProblem } from '../shared/errors.ts';
import type { AssertionKey } from '../shared/identity-assertion.ts';
import { createAdminServer, type ReadinessCheck } from './admin.ts';
import { createAuditLog, type AuditLog } from './audit/audit-log.ts';
import { createClientIp } from './client-ip.ts';
import { createHttpCache } from './cache/http-cache.ts';
import { registerCacheMetrics } from './cache/metrics.ts';
import { handlePurge } from './cache/admin-purge.ts';
import { createAuthenticator } from './identity/authenticate.ts';
import { createRateLimiter, type RateLimiter } from './rate-limit/limiter.ts';
import type { RateLimitsConfig } from './rate-limit/config-schema.ts';
import type { GatewayConfig } from './config.ts';
import { createHttpsListener, createRedirectListener, hstsValue } from './listener.ts';
import { createMetrics, type GatewayMetrics } from './metrics.ts';
import { ClientGoneError, compose, createContext, type GatewayContext } from './pipeline.ts';
import { createStages } from './stages.ts';
import { TLS_OPTIONS, describeCertificate, loadCertificate } from './tls.ts';
import { createUpstreams } from './upstreams.ts';

export interface GatewayDeps {
  log: Logger;
  /** HTTPS port; 0 picks a free one. */
  port: number;
  /** Admin port, always bound to `adminHost` (127.0.0.1 unless a test says otherwise). */
  adminPort: number;
  adminHost?: string;
  /** Certificate files when the config names none (the data dir's development certificate). */
  certificateFiles?: { certFile: string; keyFile: string };
  assertionKeys?: readonly AssertionKey[];
  /** Readiness checks of later stages (Redis, JWKS), besides the upstreams. */
  readinessChecks?: readonly ReadinessCheck[];
  /** Process metrics (CPU, memory, event loop) in /metrics; off for in-process tests. */
  processMetrics?: boolean;
  /** Development issuer and, without Redis, API-key records. Needed when a route requires auth. */
  dataDir?: string;
  /** Shared limits, revocations and invalidations; without it all of these are per process. */
  redis?: Redis;
  /** Audit log file, `-` for stdout; no audit log when absent (in-process tests). */
  auditLogPath?: string;
  /** Read for the API-key signing keys; process.env by default. */
  env?: NodeJS.ProcessEnv;
}

/** A running gateway. */
export interface Gateway {
  readonly addresses: { https: AddressInfo; admin: AddressInfo; redirect?: AddressInfo };
  readonly metrics: GatewayMetrics;
  /**
   * Stops accepting, lets in-flight requests finish (answered with `Connection: close`)
   * within `listener.shutdownTimeoutMs`, then cuts what remains and closes everything.
   */
  close(): Promise<void>;
  /** Re-reads the certificate files; a bad pair throws and the current one stays. */
  reloadCertificates(): { subject: string; validTo: string; fingerprint256: string };
  /** Applies new rate-limit policies to the next requests; nothing in flight fails. */
  reconfigureRateLimits(config: RateLimitsConfig): void;
  readonly limiter: RateLimiter;
}

export async function startGateway(config: GatewayConfig, deps: GatewayDeps): Promise<Gateway> {
  const { log } = deps;
  const files = certificateFiles(config, deps);
  const certificate = loadCertificate(files.certFile, files.keyFile);
  log.info(
    { certificate: describeCertificate(certificate.cert), keyType: certificate.keyType },
    'certificate loaded',
  );
  if (certificate.keyType !== 'ec prime256v1') {
    log.warn(
      { keyType: certificate.keyType },
      'certificate key is not ECDSA P-256: its handshakes cost more CPU (RSA-2048 ~274 µs vs ~20 µs per signature)',
    );
  }

  const metrics = createMetrics({ processMetrics: deps.processMetrics ?? false });
  const upstreams = createUpstreams(
    config.routes.map((route) => route.upstream),
    config.proxy,
  );
  const clientIpOf = createClientIp(config.proxy.trustProxy);
  const limiter = createRateLimiter(config.rateLimits, {
    redis: deps.redis,
    onStoreError: (error) =>
      log.warn({ err: { message: (error as Error).message } }, 'rate-limit store failed'),
  });
  metrics.watchRateLimiter(() => limiter.status());
  const authenticator = config.routes.some((route) => route.auth === 'required')
    ? createAuthenticator(config.auth, {
        dataDir: requireDataDir(deps),
        logger: log,
        ...(deps.redis === undefined ? {} : { redis: deps.redis }),
        ...(deps.env === undefined ? {} : { env: deps.env }),
      })
    : undefined;
  // A subscriber connection can only listen: invalidations need a second one. ioredis does
  // not prefix channel names, so the deployment's key prefix goes into the channel itself.
  const subscriber = deps.redis?.duplicate();
  const cache = createHttpCache(config.cache, {
    redis:
      deps.redis === undefined || subscriber === undefined
        ? undefined
        : { publisher: deps.redis, subscriber },
    channel: `${deps.redis?.options.keyPrefix ?? 'portico:'}cache-invalidation`,
    log,
  });
  registerCacheMetrics(metrics.registry, cache);
  // Until it hears invalidations the cache neither serves nor stores; give it a moment.
  if (deps.redis !== undefined && !(await cache.whenReady(2000))) {
    log.warn('cache invalidation channel not subscribed yet: the cache is bypassed until it is');
  }
  const audit: AuditLog | undefined =
    deps.auditLogPath === undefined ? undefined : createAuditLog({ path: deps.auditLogPath, logger: log });
  const run = compose(
    createStages(config, {
      upstreams,
      metrics,
      limiter,
      cache,
      ...(authenticator === undefined ? {} : { authenticator }),
      ...(deps.assertionKeys === undefined ? {} : { assertionKeys: deps.assertionKeys }),
    }),
  );
  const hsts = hstsValue(config.listener.hsts);
  const pending = new WeakMap<Duplex, ServerResponse>();
  let draining = false;
  let inFlight = 0;
  let idle: (() => void) | undefined;

  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    const started = process.hrtime.bigint();
    const startedAt = Date.now();
    const controller = new AbortController();
    const ctx = createContext(req, res, log, controller.signal, clientIpOf(req));
    inFlight++;
    pending.set(req.socket, res);
    res.once('close', () => {
      inFlight--;
      if (pending.get(req.socket) === res) pending.delete(req.socket);
      if (!res.writableFinished) controller.abort();
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = ctx.route?.prefix ?? 'none';
      // 499 (nginx's convention): the client left before any answer, which is not a 200.
      const status = res.headersSent ? res.statusCode : 499;
      metrics.observeRequest(route, req.method ?? 'OTHER', status, seconds);
      audit?.record({
        time: startedAt,
        requestId: ctx.requestId,
        ...(ctx.principal === undefined
          ? {}
          : {
              subject: ctx.principal.subject,
              customerId: ctx.principal.customerId,
              ...(ctx.principal.keyId === undefined ? {} : { keyId: ctx.principal.keyId }),
            }),
        clientAddress: ctx.clientIp,
        method: req.method ?? 'OTHER',
        route: ctx.path,
        status,
        latencyMs: Math.round(seconds * 1e4) / 10,
        authOutcome: ctx.facts.auth?.outcome ?? 'none',
        ...(ctx.facts.auth?.reason === undefined ? {} : { authReason: ctx.facts.auth.reason }),
        ...(ctx.facts.rateLimit === undefined ? {} : { rateLimit: ctx.facts.rateLimit }),
        ...(ctx.facts.cache === undefined ? {} : { cache: ctx.facts.cache }),
      });
      ctx.log.info(
        {
          method: req.method,
          path: ctx.path,
          route,
          status,
          durationMs: Math.round(seconds * 1e4) / 10,
          ...(res.writableFinished ? {} : { aborted: true }),
        },
        'request',
      );
      if (draining) {
        https.closeIdleConnections();
        if (inFlight === 0) idle?.();
      }
    });
    if (hsts !== undefined) res.setHeader('Strict-Transport-Security', hsts);
    void handle(ctx);
  }

  async function handle(ctx: GatewayContext): Promise<void> {
    const { res } = ctx;
    try {
      await run(ctx);
      if (ctx.response === undefined) throw new Error('no stage produced a response');
      if (draining) res.setHeader('Connection', 'close');
      const response = ctx.response;
      const { status, headers } = response;
      // Instructions from the service to this gateway (targeted cache control, invalidation
      // hints) are for us alone, whichever stages ran.
      delete headers[GATEWAY_CACHE_CONTROL];
      delete headers[CACHE_INVALIDATES];
      res.writeHead(status, headers);
      // A body already in memory goes out in one write with the head; `body` is not read,
      // so its stream is never made (pipeline.ts, bufferedResponse).
      if (response.bufferedBody !== undefined) {
        res.end(response.bufferedBody);
        return;
      }
      const body = response.body;
      if (body === null) {
        res.end();
        return;
      }
      await relay(body, res);
    } catch (error) {
      if (error instanceof ClientGoneError || res.destroyed) return;
      if (res.headersSent) {
        // Mid-body: the client must see a failure, never a truncated success.
        ctx.log.warn(
          { err: { name: (error as Error).name, code: (error as NodeJS.ErrnoException).code } },
          'response cut',
        );
        res.destroy();
        return;
      }
      const problem = error instanceof HttpProblem ? error : internalProblem(ctx, error);
      if (draining) res.setHeader('Connection', 'close');
      sendProblem(res, problem, ctx.path);
    }
  }

  const https = createHttpsListener(config.listener, { certificate, log, metrics, pending, onRequest });
  https.on('connection', (socket: Duplex) => {
    metrics.connectionOpened();
    socket.once('close', () => metrics.connectionClosed());
  });

  const admin = createAdminServer(config.admin, {
    metrics,
    purge: (req, res) => handlePurge(cache, req, res),
    log,
    draining: () => draining,
    checks: () => [
      ...upstreams.origins.map((origin) => ({
        name: `upstream ${origin}`,
        check: (timeoutMs: number) => upstreams.probe(origin, timeoutMs),
      })),
      ...(authenticator === undefined
        ? []
        : [
            {
              name: 'identity provider keys',
              check: () =>
                Promise.resolve(
                  authenticator.ready()
                    ? { ok: true, detail: 'signing keys loaded' }
                    : { ok: false, detail: 'signing keys not loaded' },
                ),
            },
          ]),
      ...(deps.redis === undefined ? [] : [redisCheck(deps.redis)]),
      ...(deps.readinessChecks ?? []),
    ],
  });

  let redirect: Server | undefined;
  let httpsAddress: AddressInfo, adminAddress: AddressInfo, redirectAddress: AddressInfo | undefined;
  try {
    httpsAddress = await listen(https, deps.port, config.listener.host);
    adminAddress = await listen(admin, deps.adminPort, deps.adminHost ?? '127.0.0.1');
    if (config.listener.httpRedirect.enabled) {
      const httpsPort = config.listener.httpRedirect.httpsPort ?? httpsAddress.port;
      redirect = createRedirectListener(() => httpsPort, log);
      redirectAddress = await listen(redirect, config.listener.httpRedirect.port, config.listener.host);
    }
  } catch (error) {
    // A port in use must not leave the other listeners open behind the error.
    for (const server of [https, admin, redirect]) if (server?.listening === true) server.close();
    await upstreams.destroy();
    throw error;
  }
  log.info(
    { port: httpsAddress.port, adminPort: adminAddress.port, redirectPort: redirectAddress?.port },
    'gateway listening',
  );

  let closing: Promise<void> | undefined;
  async function drain(): Promise<void> {
    draining = true;
    const deadlineMs = config.listener.shutdownTimeoutMs;
    log.info({ inFlight, deadlineMs }, 'draining: no new connections, finishing in-flight requests');
    const closed = new Promise<void>((resolve) => https.close(() => resolve()));
    redirect?.close();
    redirect?.closeAllConnections();
    https.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (idle = resolve))).then(
        () => true,
      ),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), deadlineMs))),
    ]);
    clearTimeout(timer);
    if (!finished) log.warn({ inFlight }, 'shutdown deadline reached: cutting remaining connections');
    https.closeAllConnections();
    await closed;
    await (finished ? upstreams.close() : upstreams.destroy());
    await new Promise<void>((resolve) => {
      admin.close(() => resolve());
      admin.closeAllConnections();
    });
    authenticator?.close();
    await cache.close();
    subscriber?.disconnect();
    await audit?.close();
    log.info('gateway stopped');
  }

  return {
    addresses: {
      https: httpsAddress,
      admin: adminAddress,
      ...(redirectAddress ? { redirect: redirectAddress } : {}),
    },
    metrics,
    limiter,
    reconfigureRateLimits(next) {
      limiter.reconfigure(next);
      log.info({ policies: next.policies.map((p) => p.name) }, 'rate limits reloaded');
    },
    close() {
      closing ??= drain();
      return closing;
    },
    reloadCertificates() {
      const next = loadCertificate(files.certFile, files.keyFile);
      // New handshakes use the new pair; connections already open keep theirs.
      https.setSecureContext({ ...TLS_OPTIONS, cert: next.cert, key: next.key });
      const described = describeCertificate(next.cert);
      log.info({ certificate: described, keyType: next.keyType }, 'certificate reloaded');
      return described;
    },
  };
}

/**
 * Streams a response body to the client. `pipe` rather than `stream.pipeline`: pipeline
 * allocates an AbortController and a DOMException per call, a measurable share of the
 * gateway's per-request CPU, for cleanup that two listeners do here.
 */
function relay(body: Readable, res: ServerResponse): Promise<void> {
  // The body may have failed while stages still held it: piping a destroyed stream would
  // wait forever for an end that never comes.
  if (body.errored !== null) return Promise.reject(body.errored);
  if (body.destroyed && !body.readableEnded) return Promise.reject(new Error('response body destroyed'));
  return new Promise((resolve, reject) => {
    const onClose = () => {
      // The client went away first: stop reading the upstream (undici then aborts it).
      if (!res.writableFinished) body.destroy();
      resolve();
    };
    res.once('close', onClose);
    body.once('error', (error) => {
      res.off('close', onClose);
      reject(error);
    });
    body.pipe(res);
  });
}

function certificateFiles(config: GatewayConfig, deps: GatewayDeps): { certFile: string; keyFile: string } {
  const { certFile, keyFile } = config.listener.tls;
  if (certFile !== undefined && keyFile !== undefined) return { certFile, keyFile };
  if (deps.certificateFiles !== undefined) return deps.certificateFiles;
  throw new Error('listener.tls.certFile and keyFile are not set and no development certificate was given');
}

function requireDataDir(deps: GatewayDeps): string {
  if (deps.dataDir === undefined)
    throw new Error('a route requires authentication: the gateway needs a data dir');
  return deps.dataDir;
}

/**
 * Redis answers within the readiness probe's time. A gateway with Redis down still serves
 * (limits fall back as configured) but reports not ready, so operators see it.
 */
function redisCheck(redis: Redis): ReadinessCheck {
  return {
    name: 'redis',
    check: async (timeoutMs) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          redis.ping(),
          new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs))),
        ]);
        return { ok: true, detail: 'PONG' };
      } catch (error) {
        return { ok: false, detail: `redis: ${(error as Error).message}` };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

function internalProblem(ctx: GatewayContext, error: unknown): HttpProblem {
  ctx.log.error({ err: error }, 'unexpected error');
  return new HttpProblem('ERR_INTERNAL', 'the gateway failed to handle this request');
}

function listen(server: Server, port: number, host: string | undefined): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}
