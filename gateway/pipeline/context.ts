/**
 * The stage contract. A request passes the stages in order; each stage may act, then call
 * `next()` to hand on, and act again on the way back (the response side runs in reverse).
 *
 * What a stage may read:
 * - `ctx.req`, the client's request, read-only (client-request.ts): its headers stay what the
 *   client sent, its body is not a stage's to read; `ctx.path` and `ctx.target` from it.
 * - `ctx.res`, the client's response, to watch only ('close', whether its head went out).
 * What a stage may write:
 * - `ctx.upstream` (upstream-request.ts), the one request the proxy sends: its route, header
 *   edits, principal and request id. The proxy reads nothing else of the request.
 * - `ctx.response`: a stage answers by setting it, or refuses by throwing an HttpProblem: the
 *   composer (compose.ts) turns the refusal into `ctx.response`, so every earlier stage's
 *   response side runs for refusals as for upstream answers. `next()` resolves with
 *   `ctx.response` set, whatever happened after it; it rejects only when the client is gone.
 *   Response headers are set in one place: `ctx.response.headers`.
 * - `ctx.facts`: what the audit record says of the request.
 * What a stage may call:
 * - `next()`, once; `ctx.interim()` to send a 1xx ahead of the answer; `ctx.fork()` for a
 *   side call on the request's behalf once its answer is out (never this context then);
 *   services its factory was handed by the builder (gateway/stages.ts), never another stage's.
 * The terminal stage (the proxy) sets `ctx.response`; the handler writes it once the whole
 * chain has unwound, so response-side stages can still change status, headers or body.
 */
import type { ServerResponse } from 'node:http';
import { Readable, type Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { HttpProblem } from '../../shared/errors.ts';
import type { ClientRequest, ResponseProgress } from './client-request.ts';
import { ClientSignal } from './client-signal.ts';
import { writeInterim, type InterimWriter } from './interim-writer.ts';
import { UpstreamRequest, type RequestBody } from './upstream-request.ts';
import { splitRequestTarget } from '../foundation/request-target.ts';

/** The response a stage produced, not yet written to the client. */
export interface GatewayResponse {
  status: number;
  headers: Record<string, string | string[]>;
  /** Streamed to the client as it arrives; `null` for no body. */
  body: Readable | null;
  /**
   * The whole body, when it is already in memory (a stored response): the listener sends it
   * with one `res.end(buffer)` instead of piping `body`, which costs a stream and a pipe per
   * request. `body` still yields the same bytes for any stage that reads it.
   */
  bufferedBody?: Buffer | undefined;
  /**
   * Set when the gateway answered with a problem of its own (a refusal, or the proxy's 502 or
   * 504) rather than relaying the upstream's answer.
   */
  problem?: HttpProblem;
  /**
   * Set on an answer that hands the client's connection over instead of sending a body (an
   * accepted WebSocket handshake, gateway/websocket/): the request handler writes the head
   * (101, or 200 on an HTTP/2 stream) and gives the tunnel the connection.
   */
  tunnel?: Tunnel | undefined;
}

/** What takes over a client's connection once the answer's head is out. */
export interface Tunnel {
  /** Takes the connection: a socket (HTTP/1.1 upgrade) or an HTTP/2 stream (RFC 8441). */
  open(connection: Duplex): void;
  /** The head was never sent (the client left, a write failed): ends what was opened for it. */
  abandon(): void;
}

/**
 * A response whose body is in memory. `body` is made on first read only (the listener never
 * reads it), and assigning `body` drops `bufferedBody`, so the two can never disagree.
 */
export function bufferedResponse(
  status: number,
  headers: Record<string, string | string[]>,
  buffer: Buffer,
): GatewayResponse {
  return new BufferedResponse(status, headers, buffer);
}

/**
 * A class rather than an object literal with `get body`/`set body`: a literal defines its two
 * accessors anew (two closures and a slow property definition) for every response, and leaves
 * each response with a shape of its own for the stages that read it.
 */
class BufferedResponse implements GatewayResponse {
  status: number;
  headers: Record<string, string | string[]>;
  bufferedBody: Buffer | undefined;
  /** Undefined until `body` is read or assigned; an assigned null (no body) stays null. */
  #stream: Readable | null | undefined = undefined;

  constructor(status: number, headers: Record<string, string | string[]>, buffer: Buffer) {
    this.status = status;
    this.headers = headers;
    this.bufferedBody = buffer;
  }

  get body(): Readable | null {
    // Neither read nor assigned yet: `bufferedBody` is still the body.
    if (this.#stream === undefined)
      this.#stream = Readable.from(this.bufferedBody ?? Buffer.alloc(0), { objectMode: false });
    return this.#stream;
  }

  set body(value: Readable | null) {
    this.#stream = value;
    this.bufferedBody = undefined;
  }
}

/** What stages decided about a request, for the audit record. */
export interface RequestFacts {
  auth?: { outcome: 'ok' | 'refused' | 'unavailable' | 'none'; reason?: string } | undefined;
  /** `allowed`, `limited`, or `unavailable`, with the store that counted (redis, memory). */
  rateLimit?: string | undefined;
  /** The cache stage's outcome, e.g. `hit`, `miss`, `stale`. */
  cache?: string | undefined;
  /** Each retry of the proxy: the target that failed and why (an error kind, or `503`). */
  retries?: { target: string; reason: string }[] | undefined;
  /** The W3C trace id this request belongs to (trace-context stage). */
  traceId?: string | undefined;
  /** `open` when the request opened a WebSocket: its record is the connection's open record. */
  websocket?: 'open' | undefined;
}

/** What the stages know about one request. */
export interface GatewayContext {
  /** The client's request, read-only: what it sent stays what it sent. */
  readonly req: ClientRequest;
  /** The client's response, to watch only: the handler writes it, a 1xx goes by `interim()`. */
  readonly res: ResponseProgress;
  /** Path without the query, as received; the problem `instance`. */
  readonly path: string;
  /** Path and query, as received (an absolute-form target's, its authority in `upstream`). */
  readonly target: string;
  /** The request's logger, bound to its id once the request-id stage has set it. */
  readonly log: Logger;
  /** The request the proxy sends upstream, as stages edited it. */
  readonly upstream: UpstreamRequest;
  response?: GatewayResponse | undefined;
  readonly facts: RequestFacts;
  /** Aborted when the client goes away: stages stop upstream work with it. */
  readonly signal: ClientSignal;
  /**
   * Sends an interim (1xx) response ahead of the answer, where one may go (interim-writer.ts):
   * never to an HTTP/1.0 client, nor once the answer has started. Throws when Node refuses a
   * field.
   */
  interim(statusCode: number, headers: Record<string, string | string[]>): void;
  /**
   * A context for a side call on this request's behalf once its answer is out (a background
   * revalidation): the same client request, a copy of the upstream request, no response, facts
   * and a signal of its own, and no 1xx to send. Its stages never touch this context.
   */
  fork(): GatewayContext;
}

/** The client's response as the context holds it: watched by stages, 1xx written by `interim()`. */
type ClientResponse = ResponseProgress & InterimWriter;

/**
 * A fresh context for a request that just arrived. A class whose constructor sets every field,
 * the ones stages fill in later too, so that every context has one shape from the start: the
 * stages' reads of it stay monomorphic instead of seeing a shape per set of fields added.
 */
class RequestContext implements GatewayContext {
  readonly req: ClientRequest;
  readonly res: ResponseProgress;
  readonly path: string;
  readonly target: string;
  readonly upstream: UpstreamRequest;
  response: GatewayResponse | undefined;
  readonly facts: RequestFacts;
  readonly signal: ClientSignal;
  readonly #log: Logger;
  #bound: Logger | undefined;
  /** Where `interim()` writes; undefined in a fork, which has no client to send a 1xx to. */
  readonly #interimTo: ClientResponse | undefined;

  constructor(
    req: ClientRequest,
    res: ResponseProgress,
    log: Logger,
    signal: ClientSignal,
    upstream: UpstreamRequest,
    interimTo: ClientResponse | undefined,
  ) {
    this.req = req;
    this.res = res;
    this.target = upstream.target;
    const query = this.target.indexOf('?');
    this.path = query === -1 ? this.target : this.target.slice(0, query);
    this.upstream = upstream;
    this.response = undefined;
    this.facts = {
      auth: undefined,
      rateLimit: undefined,
      cache: undefined,
      retries: undefined,
      traceId: undefined,
      websocket: undefined,
    };
    this.signal = signal;
    this.#log = log;
    this.#bound = undefined;
    this.#interimTo = interimTo;
  }

  /**
   * Made on first use only: a child logger costs more than most stages, and most requests log
   * nothing but their request line (request-accounting.ts, which binds the id itself).
   */
  get log(): Logger {
    const { requestId, clientRequestId } = this.upstream;
    if (requestId === '') return this.#log;
    this.#bound ??= this.#log.child(
      clientRequestId === undefined ? { requestId } : { requestId, clientRequestId },
    );
    return this.#bound;
  }

  interim(statusCode: number, headers: Record<string, string | string[]>): void {
    const res = this.#interimTo;
    if (res === undefined || this.signal.gone) return;
    writeInterim(this.req, res, statusCode, headers);
  }

  fork(): GatewayContext {
    return new RequestContext(
      this.req,
      this.res,
      this.#log,
      new ClientSignal(),
      this.upstream.fork(),
      undefined,
    );
  }
}

/** The context of a request that just arrived; `body` is the request itself when it has one. */
export function createContext(
  req: ClientRequest,
  res: ServerResponse,
  log: Logger,
  signal: ClientSignal,
  clientIp: string,
  body: RequestBody | null,
): GatewayContext {
  const { target, authority } = splitRequestTarget(req.url ?? '/');
  const upstream = UpstreamRequest.of(req, target, authority, clientIp, body);
  const response = res as unknown as ClientResponse;
  return new RequestContext(req, response, log, signal, upstream, response);
}

export type Next = () => Promise<void>;

/** Thrown by a stage when the client went away: there is nobody left to answer. */
export class ClientGoneError extends Error {
  constructor() {
    super('client closed the connection');
    this.name = 'ClientGoneError';
  }
}

/**
 * One step of the pipeline, built once by its factory from validated config. A stage with
 * nothing to do after `next()` may be a plain function returning it; a throw before it returns
 * is a refusal like a rejection (compose.ts).
 */
export type Stage = (ctx: GatewayContext, next: Next) => Promise<void>;
