/**
 * The cache stage: between rate-limit and the proxy. An adapter from the stage contract to
 * the cache (cache/cache-front.ts): the request as the client sent it, `next()` to send it
 * on, and a fork of the context for a revalidation in the background. The service's
 * instructions to this cache never reach the client: the response writer strips them from
 * every answer (edge/respond.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { Principal } from '../../shared/principal.ts';
import { CacheFront } from '../cache/cache-front.ts';
import type { Exchange } from '../cache/flight/exchange.ts';
import type { Validators } from '../cache/flight/exchange.ts';
import type { HttpCache } from '../cache/engine/http-cache.ts';
import type { ClientSignal } from '../pipeline/client-signal.ts';
import type { GatewayContext, GatewayResponse, Next, Stage } from '../pipeline/context.ts';
import type { UpstreamHeaders } from '../pipeline/upstream-headers.ts';

/**
 * What is below the cache, run on a fork of a request's context: the response the stages
 * there produced, or a rejection with the refusal or upstream failure.
 */
export type SideCall = (fork: GatewayContext) => Promise<GatewayResponse>;

/** The cache stage over one cache; `below` runs a background revalidation's side call. */
export function createCacheStage(cache: HttpCache, below: SideCall): Stage {
  const front = new CacheFront(cache);
  return (ctx, next) => front.serve(new ContextExchange(ctx, next, below));
}

/** One request's exchange, over its context. */
class ContextExchange implements Exchange {
  readonly #ctx: GatewayContext;
  readonly #next: Next;
  readonly #below: SideCall;

  constructor(ctx: GatewayContext, next: Next, below: SideCall) {
    this.#ctx = ctx;
    this.#next = next;
    this.#below = below;
  }

  /** The request's selecting fields, made once (`selectingFields`). */
  #headers: IncomingHttpHeaders | undefined = undefined;

  get method(): string {
    return this.#ctx.req.method ?? 'GET';
  }
  get target(): string {
    return this.#ctx.target;
  }
  get path(): string {
    return this.#ctx.path;
  }
  get authority(): string {
    return this.#ctx.upstream.authority;
  }
  get headers(): IncomingHttpHeaders {
    this.#headers ??= selectingFields(this.#ctx);
    return this.#headers;
  }
  get principal(): Principal | undefined {
    return this.#ctx.upstream.principal;
  }
  get cacheable(): boolean {
    return this.#ctx.upstream.route?.cache === true;
  }
  get hasBody(): boolean {
    return this.#ctx.upstream.body !== null;
  }
  get signal(): ClientSignal {
    return this.#ctx.signal;
  }
  get log(): Logger {
    return this.#ctx.log;
  }
  get response(): GatewayResponse | undefined {
    return this.#ctx.response;
  }
  set response(response: GatewayResponse | undefined) {
    this.#ctx.response = response;
  }

  fact(outcome: string): void {
    this.#ctx.facts.cache = outcome;
  }

  forward(validators?: Validators): Promise<void> {
    if (validators !== undefined) setValidators(this.#ctx.upstream.headers, validators);
    return this.#next();
  }

  onClosed(listener: () => void): void {
    this.#ctx.res.once('close', listener);
  }

  sideCall(validators: Validators): Promise<GatewayResponse> {
    const fork = this.#ctx.fork();
    setValidators(fork.upstream.headers, validators);
    return this.#below(fork);
  }
}

/**
 * The fields the cache selects and stores variants on: the client's, with the Accept-Encoding
 * the negotiate-encoding stage chose for the upstream (one spelling per choice, so three
 * variants a resource rather than one per client's spelling). The client's own object while
 * the two agree; a copy where they differ, since the client's fields are never written. The
 * client's conditions are answered from them too: a revalidation sets its own in the
 * upstream request's headers.
 */
function selectingFields(ctx: GatewayContext): IncomingHttpHeaders {
  const client = ctx.req.headers;
  const negotiated = ctx.upstream.headers.get('accept-encoding');
  if (negotiated === client['accept-encoding']) return client;
  return { ...client, 'accept-encoding': negotiated };
}

/**
 * Sends the stored response's validators upstream in place of the client's own conditions
 * (RFC 9111 section 4.3.1); the client's conditions are then answered by the cache.
 */
function setValidators(headers: UpstreamHeaders, validators: Validators): void {
  for (const name of ['if-none-match', 'if-modified-since'] as const) {
    const value = validators[name];
    if (value === undefined) headers.delete(name);
    else headers.set(name, value);
  }
  // Only the completion of held pieces sends these; nothing else touches the client's Range.
  for (const name of ['range', 'if-range'] as const) {
    const value = validators[name];
    if (value !== undefined) headers.set(name, value);
  }
}
