/**
 * The resource service on a port: an HTTPS server (mutual TLS when given a client CA), or plain
 * HTTP only when the caller passes no certificate, with bounds that keep one slow or greedy
 * client from holding it, and the drain both processes share (shared/http-drain.ts), which
 * answers what the server has received before it closes.
 */
import { createServer as createHttpServer } from '../shared/node-http.ts';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createHttpDrain } from '../shared/http-drain.ts';
import { answerUnparsed } from './http/unparsed.ts';
import { loadServiceTls, type ServiceTlsFiles } from './tls.ts';
import { createServiceApp } from './app.ts';
import { DEFAULT_DRAIN_DEADLINE_MS } from './config.ts';
import type { ServiceOptions } from './app.ts';
import { portUnavailable } from '../shared/port-unavailable.ts';

export interface RunningService {
  server: Server;
  url: string;
  /**
   * Re-reads the certificate, key and client CA files (SIGHUP): new handshakes use them,
   * connections already open keep theirs. A bad set throws and the current one stays.
   */
  reloadCertificates(): void;
  /**
   * Drains: stops accepting connections, answers the requests already received (with
   * `Connection: close`), closes idle keep-alive connections, and after `deadlineMs` (default
   * 10 s) cuts the connections still open. Resolves true when every request finished in time.
   */
  close(options?: { deadlineMs?: number }): Promise<boolean>;
}

// Bounds that keep one slow or greedy client from holding the service. The head limit is the
// gateway's own (listener.limits.maxHeaderBytes, 16 KiB by default) plus 8 KiB for what the
// gateway adds to a head it accepted: the identity assertion (its size does not grow with the
// target: shared/identity-assertion.ts) and the forwarded fields.
const BOUNDS = {
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 65_000,
  maxHeaderSize: 24 * 1024,
};

/**
 * Starts the service on `port` (0 for any) and `host`: HTTPS with `tls` (and with its client CA
 * a client certificate is required at the handshake), plain HTTP without.
 */
export async function startService(
  options: ServiceOptions & { port: number; host?: string; tls?: ServiceTlsFiles },
): Promise<RunningService> {
  const app = createServiceApp(options);
  const handler = app.handler as unknown as (req: IncomingMessage, res: ServerResponse) => void;
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    drain.track(res);
    handler(req, res);
  };
  const tls = options.tls;
  const server: Server =
    tls === undefined
      ? createHttpServer(BOUNDS, onRequest)
      : createHttpsServer(
          {
            ...BOUNDS,
            ...loadServiceTls(tls),
            // Without the gateway's certificate a caller is refused in the handshake, before
            // one byte of HTTP is read.
            requestCert: tls.clientCaFile !== undefined,
            rejectUnauthorized: tls.clientCaFile !== undefined,
          },
          onRequest,
        );
  const drain = createHttpDrain(server, options.logger);
  server.on('clientError', answerUnparsed);
  // A caller refused at the handshake (no client certificate, another CA, plain HTTP) never
  // becomes a request: this line is the only trace. Debug: anyone reaching the port can cause it.
  server.on('tlsClientError', (error: NodeJS.ErrnoException) =>
    options.logger.debug({ code: error.code }, 'TLS handshake refused'),
  );
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    // A port that cannot be taken is named by the variable that chose it.
    server.once('error', (error) => reject(portUnavailable(error, 'SERVICE_PORT', options.port, host)));
    server.listen(options.port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  let closing: Promise<boolean> | undefined;
  return {
    server,
    url: `${tls === undefined ? 'http' : 'https'}://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`,
    reloadCertificates() {
      if (tls === undefined) return;
      (server as HttpsServer).setSecureContext(loadServiceTls(tls));
    },
    close: ({ deadlineMs = DEFAULT_DRAIN_DEADLINE_MS } = {}) => (closing ??= drain.drain(deadlineMs)),
  };
}
