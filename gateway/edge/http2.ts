/**
 * HTTP/2 at the edge (RFC 9113), on the HTTPS port beside HTTP/1.1, chosen by ALPN. Requests
 * reach the same handler through node:http2's compatibility API; this file makes an h2 request
 * look like the HTTP/1.1 message it becomes upstream, and bounds what one connection may cost.
 *
 * What nghttp2 already refuses with RST_STREAM PROTOCOL_ERROR before any of our code runs
 * (each tested in test/gateway/edge/http2.test.ts): connection-specific fields (`connection`,
 * `keep-alive`, `proxy-connection`, `transfer-encoding`, `upgrade`), `te` other than
 * `trailers`, upper-case field names, missing, duplicated, unknown or misplaced pseudo-headers,
 * a `:path` that is empty or not absolute, a body longer or shorter than its Content-Length.
 * Fields with invalid characters (CR, LF, NUL, space in a name) it drops, so they never reach
 * us. What is ours: `:authority` against `host` (http-hygiene.ts), the header-list size as a
 * 431 (listener.ts), the timeouts, the requests per connection, and the reset-flood bound.
 */
import type { TLSSocket } from 'node:tls';
import {
  constants,
  Http2ServerRequest,
  Http2ServerResponse,
  type Http2Session,
  type Http2Stream,
  type OutgoingHttpHeaders,
  type SecureServerOptions,
  type ServerHttp2Stream,
} from 'node:http2';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { ReadableOptions } from 'node:stream';
import type { Logger } from 'pino';
import type { Http2Config } from '../config/schema/listener.ts';

/** The limits of `listener.limits` that HTTP/2 applies in its own terms. */
export interface Http2Limits {
  maxHeaderBytes: number;
  /** What is drained of a request body after an early answer (drainAfterAnswer). */
  maxBodyBytes: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxRequestsPerConnection: number;
}

/** RFC 9113 §8.2.2: meaningless in HTTP/2; a response names them only for HTTP/1.1's sake. */
export const CONNECTION_SPECIFIC = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
]);

/**
 * An h2 request as the pipeline reads an HTTP/1.1 one: `host` is the `:authority` when the
 * client sent no `host` (RFC 9113 §8.3.1 asks exactly this of a gateway converting to
 * HTTP/1.1). `rawHeaders` stay as sent, pseudo-headers included: the hygiene stage compares
 * `:authority` with `host` there, and the forwarded headers skip every pseudo-header.
 */
export class EdgeHttp2Request extends Http2ServerRequest {
  constructor(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    options: ReadableOptions,
    rawHeaders: readonly string[],
  ) {
    // RFC 8441: a WebSocket opened on a stream is an extended CONNECT; upstream it becomes
    // HTTP/1.1's GET with Upgrade, and the pipeline sees it as that GET (the websocket stage
    // knows it by `:protocol`). Rewritten before Node reads the method: it then comes as a
    // request, not as a CONNECT (which the listener refuses).
    if (headers[':method'] === 'CONNECT' && headers[':protocol'] === 'websocket') headers[':method'] = 'GET';
    super(stream, headers, options, rawHeaders);
    const authority = headers[':authority'];
    if (headers.host === undefined && typeof authority === 'string') headers.host = authority;
  }
}

/**
 * Drops connection-specific fields from an h2 answer: stages and the drain say
 * `Connection: close` for HTTP/1.1, and Node would otherwise warn (connection) or throw
 * (the others) when the head is sent.
 */
export class EdgeHttp2Response extends Http2ServerResponse {
  override setHeader(name: string, value: number | string | readonly string[]): void {
    if (!CONNECTION_SPECIFIC.has(name.toLowerCase())) super.setHeader(name, value);
  }

  override writeHead(
    statusCode: number,
    messageOrHeaders?: string | OutgoingHttpHeaders | readonly string[],
    headers?: OutgoingHttpHeaders | readonly string[],
  ): this {
    const fields = typeof messageOrHeaders === 'string' ? headers : messageOrHeaders;
    return super.writeHead(statusCode, withoutConnectionFields(fields) as OutgoingHttpHeaders);
  }
}

function withoutConnectionFields(
  fields: OutgoingHttpHeaders | readonly string[] | undefined,
): OutgoingHttpHeaders | readonly string[] | undefined {
  if (fields === undefined) return undefined;
  if (Array.isArray(fields)) {
    const flat = fields as readonly string[];
    // Most answers name none: those go on as they are, without a copy.
    let i = 0;
    while (i < flat.length && !CONNECTION_SPECIFIC.has(flat[i]!.toLowerCase())) i += 2;
    if (i >= flat.length) return flat;
    const kept = flat.slice(0, i);
    for (; i + 1 < flat.length; i += 2)
      if (!CONNECTION_SPECIFIC.has(flat[i]!.toLowerCase())) kept.push(flat[i]!, flat[i + 1]!);
    return kept;
  }
  return Object.fromEntries(
    Object.entries(fields).filter(([name]) => !CONNECTION_SPECIFIC.has(name.toLowerCase())),
  );
}

/**
 * Fields in one h2 header list. Before the client has acknowledged our SETTINGS, nghttp2
 * bounds a list by this count alone, and one byte on the wire may name a dynamic-table entry
 * of up to ~4 KB (HPACK amplification, RFC 7541 §7.3): 2,000, HTTP/1.1's count, let ~5 KB
 * decode to ~8 MB. 256 keeps that first flight under ~1 MB a list, and is far above what a
 * request has, cookie crumbs included (RFC 9113 §8.2.3 lets a client split them).
 */
const MAX_HEADER_LIST_PAIRS = 256;

/**
 * The server options that make h2 what the listener's limits say. The header list nghttp2
 * decodes is twice `maxHeaderBytes` (it counts 32 bytes a field beside name and value, we 4):
 * up to that, the listener answers 431 itself ({@link headerBytes}); beyond it nghttp2 resets
 * the stream (ENHANCE_YOUR_CALM) without decoding the rest, as the HTTP/1 parser stops at its
 * own bound. It binds once the client acknowledged the SETTINGS; before, the pair count does.
 */
export function http2ServerOptions(
  config: Http2Config,
  limits: Http2Limits,
  /** RFC 8441's SETTINGS_ENABLE_CONNECT_PROTOCOL: WebSockets over HTTP/2, when a route takes them. */
  extendedConnect = false,
): SecureServerOptions<
  typeof IncomingMessage,
  typeof ServerResponse,
  typeof EdgeHttp2Request,
  typeof EdgeHttp2Response
> {
  return {
    settings: {
      maxConcurrentStreams: config.maxConcurrentStreams,
      maxHeaderListSize: limits.maxHeaderBytes * 2,
      enablePush: false,
      ...(extendedConnect ? { enableConnectProtocol: true } : {}),
    },
    maxHeaderListPairs: MAX_HEADER_LIST_PAIRS,
    // nghttp2's token bucket of received RST_STREAMs (Node's own defence: burst 1000, 33/s).
    streamResetBurst: config.maxStreamResets,
    streamResetRate: Math.max(1, Math.floor(config.maxStreamResets / 10)),
    Http2ServerRequest: EdgeHttp2Request,
    Http2ServerResponse: EdgeHttp2Response,
  };
}

/**
 * The request line and fields as HTTP/1.1 would count them (name, `: `, value, CRLF each),
 * pseudo-headers included: the same `maxHeaderBytes` then means the same on both protocols.
 */
export function headerBytes(rawHeaders: readonly string[]): number {
  let bytes = 0;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2)
    bytes += rawHeaders[i]!.length + rawHeaders[i + 1]!.length + 4;
  return bytes;
}

/**
 * Bounds each h2 connection as HTTP/1.1's are bounded: its first request within
 * `headersTimeoutMs`, later ones within `keepAliveTimeoutMs` of the last answer, at most
 * `maxRequestsPerConnection` streams (then GOAWAY, and the client opens a new connection).
 * Returns what the drain needs: every open session, to cut them at the deadline.
 */
export function superviseSessions(
  limits: Http2Limits,
  log: Logger,
): {
  onSession: (session: Http2Session) => void;
  sessions: ReadonlySet<Http2Session>;
} {
  const sessions = new Set<Http2Session>();
  function onSession(session: Http2Session): void {
    sessions.add(session);
    let open = 0;
    let streams = 0;
    let idle: NodeJS.Timeout | undefined;
    const arm = (ms: number) => {
      idle = setTimeout(() => closeSession(session), ms);
      idle.unref();
    };
    arm(limits.headersTimeoutMs);
    session.on('stream', (stream: Http2Stream) => {
      clearTimeout(idle);
      open += 1;
      streams += 1;
      if (limits.maxRequestsPerConnection > 0 && streams === limits.maxRequestsPerConnection)
        closeGracefully(session);
      stream.once('close', () => {
        open -= 1;
        if (open === 0 && !session.closed) arm(limits.keepAliveTimeoutMs);
      });
    });
    session.once('close', () => {
      clearTimeout(idle);
      sessions.delete(session);
    });
    session.on('error', (error: NodeJS.ErrnoException) => {
      // nghttp2 ends a session that broke its rules (a reset flood among them) with GOAWAY: a
      // warning. A client that went away abruptly (a reset, a broken pipe) is every day's
      // traffic, not something to alert on: debug.
      const level = CLIENT_GONE.has(error.code ?? '') ? 'debug' : 'warn';
      log[level]({ code: error.code, message: error.message }, 'HTTP/2 connection closed on error');
    });
  }
  return { onSession, sessions };
}

/** The socket errors of a client that left without closing: no fault of the gateway's. */
const CLIENT_GONE = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/** GOAWAY now; a client that keeps the connection open past a second is cut. */
function closeSession(session: Http2Session): void {
  if (session.destroyed) return;
  // Idle: every answer was read long ago, nothing to linger for (see lingerBeforeEnd).
  session.close();
  setTimeout(() => session.destroy(), 1000).unref();
}

/** Marks the TLS socket of a session this gateway closes gracefully (see lingerBeforeEnd). */
const GRACEFUL = Symbol('portico.http2GracefulClose');
/** How long a gracefully closed connection waits for the client's own close. */
const LINGER_MS = 1000;

/**
 * After the last request a connection may carry: GOAWAY (streams up to the last one nghttp2
 * read are answered, later ones the client sends again elsewhere), the session ends once they
 * are, and its socket lingers (lingerBeforeEnd).
 */
function closeGracefully(session: Http2Session): void {
  if (session.closed || session.destroyed) return;
  // `session.socket` passes any other property through to the TLS socket.
  (session.socket as unknown as Record<symbol, boolean>)[GRACEFUL] = true;
  session.close();
}

/**
 * For every TLS connection of the listener: once its session was closed gracefully, Node's
 * end of the socket (sent the moment the last stream is answered) waits until the client
 * closes its side, which it does once it has read every answer, or LINGER_MS. Without it,
 * undici handles the end of the socket before it has delivered the last answers' bodies and
 * fails them "other side closed": up to one request per hundred connection switches under
 * concurrent load (test/gateway/edge/http2-rotation.test.ts). Go's HTTP/2 server waits for the
 * client after its GOAWAY in the same way.
 */
export function lingerBeforeEnd(socket: TLSSocket): void {
  const end = socket.end.bind(socket) as (...args: unknown[]) => TLSSocket;
  let held = false;
  socket.end = (...args: unknown[]) => {
    if (!(socket as unknown as Record<symbol, boolean>)[GRACEFUL] || held) return end(...args);
    held = true;
    const timer = setTimeout(() => end(...args), LINGER_MS);
    timer.unref();
    socket.once('end', () => {
      clearTimeout(timer);
      end(...args);
    });
    socket.once('close', () => clearTimeout(timer));
    return socket;
  };
}

/**
 * A request that came on an HTTP/2 stream. Not `httpVersionMajor === 2`: an HTTP/1.1
 * connection may carry a request line that says `HTTP/2.0` (http-hygiene.ts refuses it).
 */
export function isHttp2Request(req: object): boolean {
  return (req as unknown) instanceof Http2ServerRequest;
}

/** An h2 request whose HEADERS did not end the stream: DATA follows, length announced or not. */
export function http2BodyFollows(req: object): boolean {
  return isHttp2Request(req) && !(req as unknown as Http2ServerRequest).stream.endAfterHeaders;
}

/**
 * Once the answer to a stream whose request is still arriving is out (END_STREAM sent, the
 * stream's 'finish'): the rest of the body is read and dropped, up to `maxBodyBytes` more, so
 * the upload ends as the client meant it to and its stream closes. Past that (or a declared
 * length past it), RST_STREAM NO_ERROR asks the client to stop (RFC 9113 §8.1). Not the reset
 * alone for every early answer: a client still writing its request when it comes (node:http2's
 * own, as measured in test/gateway/upstream/hostile-upstream-early-answer.test.ts) does not
 * stop at RST_STREAM NO_ERROR, and its upload then waits on a flow-control window that never
 * opens.
 */
export function drainAfterAnswer(req: Http2ServerRequest, maxBodyBytes: number): void {
  const { stream } = req;
  if (stream.endAfterHeaders) return;
  stream.once('finish', () => {
    if (stream.destroyed || stream.state.remoteClose === 1) return;
    if (Number(req.headers['content-length']) > maxBodyBytes) {
      stream.close(constants.NGHTTP2_NO_ERROR);
      return;
    }
    let drained = 0;
    req.on('data', (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > maxBodyBytes && !stream.destroyed) stream.close(constants.NGHTTP2_NO_ERROR);
    });
    req.resume();
  });
}

/**
 * Once the answer to a stream whose request is still arriving is out (END_STREAM sent, the
 * stream's 'finish'): RST_STREAM NO_ERROR tells the client to stop sending (RFC 9113 §8.1),
 * as `Connection: close` does on HTTP/1.1. Sooner, it would cut the answer.
 */
export function stopReceiving(stream: Http2Stream): void {
  if (stream.endAfterHeaders) return;
  stream.once('finish', () => {
    if (!stream.destroyed && stream.state.remoteClose !== 1) stream.close(constants.NGHTTP2_NO_ERROR);
  });
}
