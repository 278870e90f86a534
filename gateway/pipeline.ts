/**
 * The stage model. A request passes the stages in order; each stage may act, then call
 * `next()` to hand on, and act again on the way back (the response side runs in reverse).
 * The terminal stage (the proxy) sets `ctx.response`; the listener writes it once the whole
 * chain has unwound, so response-side stages can still change status, headers or body.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Principal } from '../shared/principal.ts';
import type { RouteDefinition } from './stages/route.ts';

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
  bufferedBody?: Buffer;
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
  let stream: Readable | null | undefined;
  return {
    status,
    headers,
    bufferedBody: buffer,
    get body(): Readable | null {
      stream ??= Readable.from(buffer, { objectMode: false });
      return stream;
    },
    set body(value: Readable | null) {
      stream = value;
      this.bufferedBody = undefined;
    },
  };
}

/** What stages decided about a request, for the audit record. */
export interface RequestFacts {
  auth?: { outcome: 'ok' | 'refused' | 'unavailable' | 'none'; reason?: string };
  /** `allowed`, `limited`, or `unavailable`, with the store that counted (redis, memory). */
  rateLimit?: string;
  /** The cache stage's outcome, e.g. `hit`, `miss`, `stale`. */
  cache?: string;
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
  log: Logger;
  route?: RouteDefinition;
  /** Set by the authenticate stage (identity issue); the proxy asserts it upstream. */
  principal?: Principal;
  response?: GatewayResponse;
  readonly facts: RequestFacts;
  /** The client's address as limits and the audit log count it (client-ip.ts), found once. */
  readonly clientIp: string;
  /** Aborted when the client goes away: stages stop upstream work with it. */
  readonly signal: AbortSignal;
}

/** A fresh context for a request that just arrived. */
export function createContext(
  req: IncomingMessage,
  res: ServerResponse,
  log: Logger,
  signal: AbortSignal,
  clientIp: string,
): GatewayContext {
  const target = req.url ?? '/';
  return {
    req,
    res,
    target,
    path: target.split('?', 1)[0] ?? '/',
    requestId: '',
    log,
    signal,
    facts: {},
    clientIp,
  };
}

export type Next = () => Promise<void>;

/** Thrown by a stage when the client went away: there is nobody left to answer. */
export class ClientGoneError extends Error {
  constructor() {
    super('client closed the connection');
    this.name = 'ClientGoneError';
  }
}

/** One step of the pipeline, built once by its factory from validated config. */
export type Stage = (ctx: GatewayContext, next: Next) => Promise<void>;

/** Runs the stages in order; a stage that does not call `next()` ends the request there. */
export function compose(stages: readonly Stage[]): (ctx: GatewayContext) => Promise<void> {
  return function run(ctx) {
    const dispatch = (index: number): Promise<void> => {
      const stage = stages[index];
      if (stage === undefined) return Promise.resolve();
      let called = false;
      return stage(ctx, () => {
        if (called) return Promise.reject(new Error(`stage ${index} called next() twice`));
        called = true;
        return dispatch(index + 1);
      });
    };
    return dispatch(0);
  };
}
