/**
 * Starts one gateway: builds it (build.ts), then puts its listeners in front: the admin
 * listener, HTTPS, and the optional HTTP redirect. Everything opened goes on one lifecycle,
 * so a start that fails (a port in use) closes what it had opened, and `close()` drains in
 * reverse: redirect, HTTPS (in-flight requests finish), admin (it answers `/readyz` 503 until
 * then), then the components behind them.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { createHttpDrain } from '../shared/http-drain.ts';
import { Lifecycle } from '../shared/lifecycle.ts';
import type { AuditEntry } from './audit/audit-record.ts';
import { buildGateway, type BuildDeps, type BuildOptions } from './build.ts';
import { closeServer, listen } from './listen.ts';
import { startAdminListener, type AdminDeps } from './start-admin.ts';
import type { GatewayConfig } from './config/schema/gateway.ts';
import { createHttpsListener, createRedirectListener, hstsValue } from './edge/listener.ts';
import { NOSNIFF, type Refusal } from './edge/raw-refusal.ts';
import { TLS_OPTIONS, describeCertificate, loadCertificate, type CertificatePair } from './edge/tls.ts';
import type { GatewayMetrics } from './observability/metrics.ts';
import type { RateLimiter } from './rate-limit/limiter.ts';

export interface GatewayDeps extends BuildDeps, AdminDeps {
  /** HTTPS port; 0 picks a free one. */
  port: number;
  /** Certificate files when the config names none (the data dir's development certificate). */
  certificateFiles?: { certFile: string; keyFile: string };
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
  /**
   * Builds a new pipeline from `config` (routes, upstreams, auth, CORS, limits...) and serves
   * the next requests with it; those in flight finish on the old one, closed once they have
   * (`drained`). A build that fails throws and the running pipeline stays. The listener and
   * admin settings are not read from it: they need a restart (config/reload.ts).
   */
  reconfigure(config: GatewayConfig): Promise<{ drained: Promise<void> }>;
  readonly limiter: RateLimiter;
}

export async function startGateway(
  config: GatewayConfig,
  deps: GatewayDeps,
  options: BuildOptions = {},
): Promise<Gateway> {
  const { log } = deps;
  const files = certificateFiles(config, deps);
  const certificate = loadCertificate(files.certFile, files.keyFile);
  logCertificate(log, certificate);
  const lifecycle = new Lifecycle();
  return lifecycle.start(async () => {
    // Every HTTPS answer carries these; the handler writes them with the response's own fields.
    const hsts = hstsValue(config.listener.hsts);
    const answerHeaders: Record<string, string> = {
      ...(hsts === undefined ? {} : { 'strict-transport-security': hsts }),
      [NOSNIFF.name.toLowerCase()]: NOSNIFF.value,
    };
    const built = await buildGateway(config, { ...deps, answerHeaders }, options, lifecycle);
    let draining = false;
    const adminAddress = await startAdminListener(config, deps, built, lifecycle, () => draining);

    const https = createHttpsListener(config.listener, {
      certificate,
      log,
      metrics: built.metrics,
      onRequest: (req, res) => {
        httpsDrain.track(res);
        built.handler(req, res);
      },
      onRefused: (refusal) => built.audit?.record(refusalEntry(refusal)),
      // Decided by the routes at start: the listener's SETTINGS cannot change on a reload, so a
      // WebSocket route added by one takes HTTP/1.1 handshakes until a restart.
      extendedConnect: built.config.routes.some((route) => route.websocket !== undefined),
    });
    // Made right after the listener, before it can take a request.
    // The drain uses close, closeIdleConnections and closeAllConnections, which the edge
    // server has for both protocols (listener.ts).
    const httpsDrain = createHttpDrain(https as unknown as Server, log);
    https.on('connection', (socket: Duplex) => {
      built.metrics.connectionOpened();
      socket.once('close', () => built.metrics.connectionClosed());
    });
    const httpsAddress = await listen(https, deps.port, config.listener.host, 'GATEWAY_PORT');
    lifecycle.defer('https listener', async () => {
      draining = true;
      // WebSockets hear 1001 (going away) as the drain begins: they would otherwise hold it
      // until its deadline, then be cut without a close frame.
      await Promise.all([built.websockets.closeAll(), httpsDrain.drain(config.listener.shutdownTimeoutMs)]);
    });

    const redirectAddress = await startRedirect(config, httpsAddress, log, lifecycle);
    log.info(
      { port: httpsAddress.port, adminPort: adminAddress.port, redirectPort: redirectAddress?.port },
      'gateway listening',
    );

    return {
      addresses: {
        https: httpsAddress,
        admin: adminAddress,
        ...(redirectAddress ? { redirect: redirectAddress } : {}),
      },
      metrics: built.metrics,
      limiter: built.limiter,
      async reconfigure(next) {
        const swapped = await built.reconfigure(next);
        log.info({ routes: next.routes.map((route) => route.prefix) }, 'pipeline replaced');
        return swapped;
      },
      async close() {
        await lifecycle.close();
        log.info('gateway stopped');
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
  });
}

/** The audit record of an answer the listener wrote to the socket: what it knew, nothing more. */
function refusalEntry(refusal: Refusal): AuditEntry {
  return {
    requestId: refusal.requestId,
    clientAddress: refusal.clientAddress,
    ...(refusal.method === undefined ? {} : { method: refusal.method }),
    ...(refusal.target === undefined ? {} : { path: refusal.target }),
    status: refusal.status,
    code: refusal.code,
    // The refusal came before any stage: authentication never ran.
    authOutcome: 'none',
  };
}

async function startRedirect(
  config: GatewayConfig,
  httpsAddress: AddressInfo,
  log: Logger,
  lifecycle: Lifecycle,
): Promise<AddressInfo | undefined> {
  const { httpRedirect } = config.listener;
  if (!httpRedirect.enabled) return undefined;
  const httpsPort = httpRedirect.httpsPort ?? httpsAddress.port;
  const redirect = createRedirectListener(() => httpsPort, log);
  const address = await listen(
    redirect,
    httpRedirect.port,
    config.listener.host,
    'listener.httpRedirect.port',
  );
  lifecycle.defer('redirect listener', () => closeServer(redirect));
  return address;
}

function certificateFiles(config: GatewayConfig, deps: GatewayDeps): { certFile: string; keyFile: string } {
  const { certFile, keyFile } = config.listener.tls;
  if (certFile !== undefined && keyFile !== undefined) return { certFile, keyFile };
  if (deps.certificateFiles !== undefined) return deps.certificateFiles;
  throw new Error('listener.tls.certFile and keyFile are not set and no development certificate was given');
}

function logCertificate(log: Logger, certificate: CertificatePair & { keyType: string }): void {
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
}
