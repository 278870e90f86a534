/**
 * The stage contract. A request passes the stages in order; each stage may act, then call
 * `next()` to hand on, and act again on the way back (the response side runs in reverse).
 *
 * - A stage answers by setting `ctx.response`, or refuses by throwing an HttpProblem: the
 *   composer (compose.ts) turns the refusal into `ctx.response`, so every earlier stage's
 *   response side runs for refusals as for upstream answers. `next()` resolves with
 *   `ctx.response` set, whatever happened after it; it rejects only when the client is gone.
 * - Response headers are set in one place: `ctx.response.headers`.
 * - What goes upstream is edited in one place: `ctx.upstreamHeaders` (upstream-headers.ts).
 * - Facts for the audit record go to `ctx.facts`.
 * The terminal stage (the proxy) sets `ctx.response`; the handler writes it once the whole
 * chain has unwound, so response-side stages can still change status, headers or body.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { HttpProblem } from '../../shared/errors.ts';
import type { Principal } from '../../shared/principal.ts';
import type { RouteDefinition } from '../stages/route-schema.ts';
import type { ClientSignal } from './client-signal.ts';
import { UpstreamHeaders } from './upstream-headers.ts';

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
}

/** What the stages know about one request. */
export interface GatewayContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** Path without the query, as received; the problem `instance`. */
  readonly path: string;
  /** Path and query, as received, forwarded unchanged. */
  readonly target: string;
  requestId: string;
  /** The request's logger, bound to its id once the request-id stage has set it. */
  readonly log: Logger;
  route?: RouteDefinition | undefined;
  /** The request headers the proxy sends upstream, as stages edited them. */
  readonly upstreamHeaders: UpstreamHeaders;
  /** Set by the authenticate stage (identity issue); the proxy asserts it upstream. */
  principal?: Principal | undefined;
  response?: GatewayResponse | undefined;
  readonly facts: RequestFacts;
  /** The client's address as limits and the audit log count it (client-ip.ts), found once. */
  readonly clientIp: string;
  /** Aborted when the client goes away: stages stop upstream work with it. */
  readonly signal: ClientSignal;
}

/**
 * A fresh context for a request that just arrived. A class whose constructor sets every field,
 * the ones stages fill in later too, so that every context has one shape from the start: the
 * stages' reads of it stay monomorphic instead of seeing a shape per set of fields added.
 */
class RequestContext implements GatewayContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly path: string;
  readonly target: string;
  requestId = '';
  route: RouteDefinition | undefined = undefined;
  readonly upstreamHeaders: UpstreamHeaders;
  principal: Principal | undefined = undefined;
  response: GatewayResponse | undefined = undefined;
  readonly facts: RequestFacts = {
    auth: undefined,
    rateLimit: undefined,
    cache: undefined,
    retries: undefined,
    traceId: undefined,
  };
  readonly clientIp: string;
  readonly signal: ClientSignal;
  readonly #log: Logger;
  #bound: Logger | undefined = undefined;

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    log: Logger,
    signal: ClientSignal,
    clientIp: string,
  ) {
    this.req = req;
    this.res = res;
    const target = req.url ?? '/';
    const query = target.indexOf('?');
    this.target = target;
    this.path = query === -1 ? target : target.slice(0, query);
    this.upstreamHeaders = new UpstreamHeaders(req.rawHeaders);
    this.clientIp = clientIp;
    this.signal = signal;
    this.#log = log;
  }

  /**
   * Made on first use only: a child logger costs more than most stages, and most requests log
   * nothing but their request line (request-accounting.ts, which binds the id itself).
   */
  get log(): Logger {
    if (this.requestId === '') return this.#log;
    this.#bound ??= this.#log.child({ requestId: this.requestId });
    return this.#bound;
  }
}

export function createContext(
  req: IncomingMessage,
  res: ServerResponse,
  log: Logger,
  signal: ClientSignal,
  clientIp: string,
): GatewayContext {
  return new RequestContext(req, res, log, signal, clientIp);
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
