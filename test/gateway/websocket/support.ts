/**
 * Real WebSocket ends for the gateway's tests, all ws (the engine the gateway relays with): an
 * upstream that echoes over HTTP/1.1 (plain, TLS or mutual TLS), a client over HTTP/1.1
 * Upgrade, and a client over an HTTP/2 extended CONNECT stream (RFC 8441) from node:http2.
 */
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import WebSocket, { WebSocketServer } from 'ws';
import { TLS_OPTIONS } from '../../../shared/tls-policy.ts';
import type { TestGateway } from '../support/harness.ts';

export interface EchoUpstream {
  url: string;
  /** The handshake fields of every connection, and its client certificate's CN ('' for none). */
  handshakes: { url: string; headers: IncomingHttpHeaders; peer: string }[];
  /** How each connection ended, as the upstream saw it. */
  closes: { code: number; reason: string }[];
  /** The connections open now. */
  sockets: Set<WebSocket>;
  close(): Promise<void>;
}

/**
 * Echoes every message back as it came (text as text); `hello`, when given, is sent first.
 * With `tls` it serves HTTPS, and with `tls.ca` requires a client certificate from that CA.
 */
export async function startEchoUpstream(
  options: { tls?: { cert: string; key: string; ca?: string }; hello?: string } = {},
): Promise<EchoUpstream> {
  const { tls } = options;
  const server: Server =
    tls === undefined
      ? createHttpServer()
      : createHttpsServer({
          ...TLS_OPTIONS,
          cert: tls.cert,
          key: tls.key,
          ...(tls.ca === undefined ? {} : { ca: tls.ca, requestCert: true, rejectUnauthorized: true }),
        });
  const wss = new WebSocketServer({ server, handleProtocols: (offered) => [...offered][0] ?? false });
  const echo: EchoUpstream = {
    url: '',
    handshakes: [],
    closes: [],
    sockets: new Set(),
    close: async () => {},
  };
  wss.on('connection', (socket, req) => {
    const peer = tls === undefined ? undefined : (req.socket as TLSSocket).getPeerCertificate();
    echo.handshakes.push({
      url: req.url ?? '',
      headers: req.headers,
      peer: typeof peer?.subject?.CN === 'string' ? peer.subject.CN : '',
    });
    echo.sockets.add(socket);
    socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary }));
    socket.on('close', (code, reason) => {
      echo.sockets.delete(socket);
      echo.closes.push({ code, reason: reason.toString() });
    });
    if (options.hello !== undefined) socket.send(options.hello);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  echo.url = `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`;
  echo.close = async () => {
    for (const socket of wss.clients) socket.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return echo;
}

/** A refused handshake: the status and the body of the gateway's answer. */
export interface Refused {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Opens a WebSocket through the gateway over HTTP/1.1 Upgrade; a refusal resolves as one. */
export function openH1(
  gw: Pick<TestGateway, 'port' | 'certificate'>,
  path: string,
  options: { headers?: Record<string, string>; protocols?: string[]; origin?: string } = {},
): Promise<{ ws: WebSocket; headers: IncomingHttpHeaders } | Refused> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`wss://localhost:${gw.port}${path}`, options.protocols ?? [], {
      ca: gw.certificate.cert,
      perMessageDeflate: false,
      headers: options.headers ?? {},
      ...(options.origin === undefined ? {} : { origin: options.origin }),
    });
    ws.once('upgrade', (response) => {
      ws.once('open', () => resolve({ ws, headers: response.headers }));
    });
    ws.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => {
        ws.terminate();
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body });
      });
    });
    ws.once('error', reject);
  });
}

/**
 * Opens a WebSocket through the gateway over HTTP/2 (RFC 8441): waits for the server's
 * SETTINGS_ENABLE_CONNECT_PROTOCOL, sends CONNECT with `:protocol: websocket`, and on 200
 * runs ws's client side on the stream. ws has no public client for an existing stream, so its
 * socket is made as a server's is (`setSocket`, as WebSocketServer does) and told it is the
 * client, which masks what it sends (RFC 6455 §5.3).
 */
export async function openH2(
  gw: Pick<TestGateway, 'port' | 'certificate'>,
  path: string,
  headers: Record<string, string> = {},
): Promise<
  | { ws: WebSocket; session: ClientHttp2Session; headers: IncomingHttpHeaders }
  | (Refused & { session: ClientHttp2Session })
> {
  const session = http2Connect(`https://localhost:${gw.port}`, { ca: gw.certificate.cert });
  session.on('error', () => {});
  const settings = await new Promise<{ enableConnectProtocol?: boolean }>((resolve) =>
    session.once('remoteSettings', resolve),
  );
  if (settings.enableConnectProtocol !== true) throw new Error('the gateway did not enable extended CONNECT');
  const stream = session.request({
    ':method': 'CONNECT',
    ':protocol': 'websocket',
    ':scheme': 'https',
    ':authority': `localhost:${gw.port}`,
    ':path': path,
    'sec-websocket-version': '13',
    ...headers,
  });
  const response = await new Promise<IncomingHttpHeaders>((resolve, reject) => {
    stream.once('response', (fields) => resolve(fields));
    stream.once('error', reject);
  });
  const status = Number(response[':status']);
  if (status !== 200) {
    // Read to its END_STREAM; the gateway then resets the stream (NO_ERROR: stop sending), which
    // an async iterator would report as a premature close.
    let body = '';
    stream.on('data', (chunk: Buffer) => (body += chunk.toString()));
    await new Promise((resolve) => stream.once('close', resolve));
    return { status, headers: response, body, session };
  }
  const ws = new (WebSocket as unknown as new (a: null, p: undefined, o: object) => WebSocket)(
    null,
    undefined,
    {
      autoPong: true,
      closeTimeout: 5000,
    },
  );
  const internals = ws as unknown as {
    _isServer: boolean;
    setSocket(socket: unknown, head: Buffer, options: Record<string, unknown>): void;
  };
  internals._isServer = false;
  internals.setSocket(stream, Buffer.alloc(0), { maxPayload: 0, allowSynchronousEvents: true });
  return { ws, session, headers: response };
}

/** The next message on `ws`, as text. */
export function nextMessage(ws: WebSocket): Promise<string> {
  return new Promise((resolve) => ws.once('message', (data: Buffer) => resolve(data.toString())));
}

/** How `ws` was closed: the code and reason its peer sent. */
export function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) =>
    ws.once('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString() })),
  );
}

export function isRefused<T extends object>(outcome: T | Refused): outcome is Refused {
  return 'status' in outcome;
}
