/**
 * The HTTPS listener: TLS, HTTP/2 and HTTP/1.1 by ALPN, header and time limits, and the
 * answers to requests the HTTP parser refuses. Also the optional plain-HTTP listener, which
 * only redirects.
 */
import type { IncomingMessage } from 'node:http';
import {
  createServer as createHttpServer,
  Server as HttpServer,
  ServerResponse,
} from '../../shared/node-http.ts';
import {
  createSecureServer,
  Http2ServerRequest,
  Http2ServerResponse,
  type Http2SecureServer,
  type SecureServerOptions,
} from 'node:http2';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { HttpProblem, PROBLEM_CONTENT_TYPE } from '../../shared/errors.ts';
import type { ListenerConfig } from '../config/schema/listener.ts';
import { clientErrorProblem } from './http-hygiene.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { http2ServerOptions, lingerBeforeEnd, superviseSessions } from './http2.ts';
import { createHttp2Requests } from './http2-requests.ts';
import { createProgressTimeouts } from './progress-timeout.ts';
import { NOSNIFF, connectProblem, createRefusals, requestLineOf, type Refusal } from './raw-refusal.ts';
import { TLS_OPTIONS, type CertificatePair } from './tls.ts';
import { answerPlainHttp } from './plain-http-on-tls.ts';
import { upgradeResponse } from './upgrade-request.ts';

export function hstsValue(config: ListenerConfig['hsts']): string | undefined {
  if (!config.enabled) return undefined;
  return [
    `max-age=${config.maxAgeSeconds}`,
    ...(config.includeSubDomains ? ['includeSubDomains'] : []),
    ...(config.preload ? ['preload'] : []),
  ].join('; ');
}

export interface ListenerDeps {
  certificate: CertificatePair;
  log: Logger;
  metrics: GatewayMetrics;
  onRequest: (req: IncomingMessage, res: ServerResponse) => void;
  /** Told of every answer written straight to a socket, for the audit log. */
  onRefused?: (refusal: Refusal) => void;
  /**
   * Whether HTTP/2 clients may open WebSockets (RFC 8441's SETTINGS_ENABLE_CONNECT_PROTOCOL):
   * when a route takes them.
   */
  extendedConnect?: boolean;
}

/**
 * The HTTPS listener: node:http2's server with HTTP/1.1 beside it (ALPN `h2`, then
 * `http/1.1`; a client that offers neither is refused in the handshake, RFC 7301 §3.2).
 * `closeAllConnections` cuts both kinds, as the drain expects of an HTTP server.
 */
export type EdgeServer = Http2SecureServer & { closeAllConnections(): void };

export function createHttpsListener(config: ListenerConfig, deps: ListenerDeps): EdgeServer {
  const { limits } = config;
  const hsts = hstsValue(config.hsts);
  const refuse = createRefusals(hsts, deps);
  const http1 = http1Requests(limits, deps.onRequest);
  const http2 = createHttp2Requests(limits, deps.onRequest, refuse);
  const supervisor = superviseSessions(limits, deps.log);
  // Both protocols share the one TLS port; the compat request tells which one this is.
  const dispatch = (
    req: IncomingMessage | Http2ServerRequest,
    res: ServerResponse | Http2ServerResponse,
  ): void => {
    if (req instanceof Http2ServerRequest) http2(req, res as Http2ServerResponse);
    else http1.onRequest(req, res as ServerResponse);
  };
  const server = createSecureServer(
    {
      ...TLS_OPTIONS,
      ...deps.certificate,
      ...(config.http2.enabled
        ? http2ServerOptions(config.http2, limits, deps.extendedConnect ?? false)
        : { ALPNCallback: http1Only }),
      allowHTTP1: true,
      // Requested, never required: TLS renegotiation is refused, so a route cannot ask later.
      ...(config.tls.requestClientCertificates ? { requestCert: true, rejectUnauthorized: false } : {}),
      ...http1Options(limits),
      handshakeTimeout: limits.headersTimeoutMs,
      noDelay: true,
    } as SecureServerOptions,
    dispatch,
  ) as EdgeServer;
  server.maxConnections = limits.maxConnections;
  answerPlainHttp(server, { handshakeTimeoutMs: limits.headersTimeoutMs, log: deps.log });
  server.on('session', supervisor.onSession);
  server.on('secureConnection', lingerBeforeEnd);
  const progress = createProgressTimeouts(limits.progressTimeoutMs, deps.metrics.registry);
  server.on('session', progress.onSession);
  server.on('secureConnection', progress.onConnection);
  server.once('close', progress.stop);
  server.closeAllConnections = () => {
    HttpServer.prototype.closeAllConnections.call(server);
    for (const session of supervisor.sessions) session.destroy();
  };

  // Never invite a body we will refuse: without `100 Continue` the client sends nothing and
  // the proxy stage answers 413 from the declared length alone.
  server.on('checkContinue', (req: IncomingMessage | Http2ServerRequest, res: ServerResponse) => {
    if (!(Number(req.headers['content-length']) > limits.maxBodyBytes)) res.writeContinue();
    dispatch(req, res);
  });
  // Any other expectation goes through the pipeline, whose hygiene stage refuses it with a 417
  // problem: without a listener Node answers a bare 417, unaudited and without our fields.
  server.on('checkExpectation', dispatch);
  // Requests with Upgrade go through the pipeline too (upgrade-request.ts), where the websocket
  // stage decides: without this listener Node would serve them as plain requests.
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const res = upgradeResponse(req, socket, head);
    if (!(res instanceof ServerResponse)) {
      refuse.socket(socket, res, { method: req.method ?? 'OTHER', target: req.url ?? '' });
      return;
    }
    http1.onRequest(req, res);
  });
  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: unknown }, socket: Duplex) => {
    const problem = clientErrorProblem(error);
    const inProgress = http1.pending.get(socket);
    if (problem !== undefined && socket.writable && inProgress?.headersSent !== true) {
      const known =
        inProgress !== undefined
          ? { method: inProgress.req.method ?? 'OTHER', target: inProgress.req.url ?? '' }
          : http1.served.has(socket)
            ? {}
            : requestLineOf(error.rawPacket);
      const requestId = refuse.socket(socket, problem, known);
      deps.log.info(
        { requestId, status: problem.status, code: problem.code, reason: error.code },
        'request refused',
      );
    } else {
      socket.destroy();
    }
  });
  // Without a listener Node closes the socket silently (HTTP/1.1) or answers a bare 405
  // (HTTP/2); a refusal is answered as a problem and audited.
  server.on(
    'connect',
    (req: IncomingMessage | Http2ServerRequest, socketOrRes: Duplex | Http2ServerResponse) => {
      const problem = connectProblem();
      const known = { method: 'CONNECT', target: req.url ?? '' };
      const requestId =
        socketOrRes instanceof Http2ServerResponse
          ? refuse.stream(socketOrRes, problem, known)
          : refuse.socket(socketOrRes, problem, known);
      deps.log.info({ requestId, status: problem.status, code: problem.code }, 'request refused');
    },
  );
  server.on('tlsClientError', (error: NodeJS.ErrnoException) => {
    deps.log.debug({ code: error.code }, 'TLS handshake failed');
  });
  server.on('drop', () => {
    deps.log.warn({ maxConnections: limits.maxConnections }, 'connection refused: maxConnections reached');
  });
  return server;
}

/**
 * With HTTP/2 off: node:http2 would offer `h2` whatever ALPNProtocols says, so the choice is
 * made here (no `http/1.1` offered: the handshake fails with no_application_protocol).
 */
function http1Only({ protocols }: { protocols: string[] }): string | undefined {
  return protocols.includes('http/1.1') ? 'http/1.1' : undefined;
}

/** node:http's own limits, which node:http2 applies to its HTTP/1.1 connections. */
function http1Options(limits: ListenerConfig['limits']): Record<string, unknown> {
  return {
    maxHeaderSize: limits.maxHeaderBytes,
    // We answer a missing Host ourselves, as a problem like every other refusal.
    requireHostHeader: false,
    // The timeouts are only as precise as this sweep.
    connectionsCheckingInterval: Math.min(1000, Math.ceil(limits.headersTimeoutMs / 4)),
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
  };
}

/** HTTP/1.1 requests: counted per connection, the one in progress known to the error handler. */
function http1Requests(limits: ListenerConfig['limits'], handle: ListenerDeps['onRequest']) {
  // Counted here rather than with Node's maxRequestsPerSocket, which answers pipelined
  // requests past the bound with a bare 503. The last allowed response announces the close;
  // requests pipelined behind it go unanswered, which tells the client to resend them.
  const served = new WeakMap<Duplex, number>();
  // The response in progress per connection: a parser error can only be answered before it.
  const pending = new WeakMap<Duplex, ServerResponse>();
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const count = (served.get(req.socket) ?? 0) + 1;
    served.set(req.socket, count);
    const max = limits.maxRequestsPerConnection;
    // Pipelined past the bound: its answer could never be sent, so it must not be forwarded.
    if (max > 0 && count > max) return;
    if (max > 0 && count === max) res.setHeader('Connection', 'close');
    pending.set(req.socket, res);
    res.once('close', () => {
      if (pending.get(req.socket) === res) pending.delete(req.socket);
    });
    handle(req, res);
  };
  return { onRequest, served, pending };
}

const HOSTNAME = /^(?:[A-Za-z0-9-]{1,63}\.)*[A-Za-z0-9-]{1,63}$|^\[[0-9A-Fa-f:.]+\]$/;

/** Plain HTTP that answers every request with a 308 to the same target over HTTPS. */
export function createRedirectListener(httpsPort: () => number, log: Logger): HttpServer {
  const server = createHttpServer({ requireHostHeader: false }, (req, res) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    const target = req.url ?? '/';
    if (!HOSTNAME.test(host) || !target.startsWith('/')) {
      const problem = new HttpProblem('ERR_BAD_REQUEST', 'a valid Host and path are needed to redirect');
      res.setHeader('Connection', 'close');
      res.setHeader(NOSNIFF.name, NOSNIFF.value);
      res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
      res.setHeader('Cache-Control', 'no-store');
      res.writeHead(problem.status).end(JSON.stringify(problem.toDocument(target.split('?')[0])));
      return;
    }
    const port = httpsPort();
    res.setHeader('Location', `https://${host}${port === 443 ? '' : `:${port}`}${target}`);
    res.setHeader(NOSNIFF.name, NOSNIFF.value);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Connection', 'close');
    res.writeHead(308).end();
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  server.on('listening', () => log.info({ address: server.address() }, 'HTTP redirect listener open'));
  return server;
}
