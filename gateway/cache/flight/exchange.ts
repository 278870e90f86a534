/**
 * What the cache needs of one client request and of the pipeline below it: the request as
 * received, a way to send it on, and a side call for revalidating in the background. The
 * cache stage implements it over the pipeline's context (stages/cache.ts); nothing in cache/
 * sees the context itself.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { Principal } from '../../../shared/principal.ts';
import type { ClientSignal } from '../../pipeline/client-signal.ts';
import type { GatewayResponse } from '../../pipeline/context.ts';

/**
 * The conditions sent upstream in place of the client's own; with `range` and `if-range`, the
 * rest of a representation whose first bytes the cache holds (RFC 9111 section 3.3).
 */
export interface Validators {
  'if-none-match'?: string;
  'if-modified-since'?: string;
  range?: string;
  'if-range'?: string;
}

export interface Exchange {
  readonly method: string;
  /** Path and query, as received. */
  readonly target: string;
  /** Path without the query. */
  readonly path: string;
  /**
   * The authority the request names and the gateway forwards upstream: an absolute-form
   * target's, else Host's (RFC 9112 section 3.2.2). The key holds this one, never the Host
   * field beside an absolute-form target, since the upstream may build the answer from it.
   */
  readonly authority: string;
  /** The client's own headers: its conditions are answered from them. */
  readonly headers: IncomingHttpHeaders;
  readonly principal: Principal | undefined;
  /** The route allows caching. */
  readonly cacheable: boolean;
  /** The request has a body (it cannot be sent twice). */
  readonly hasBody: boolean;
  /** Tells when the client goes away. */
  readonly signal: ClientSignal;
  readonly log: Logger;
  /** The answer so far: set by `forward`, or by the cache from a stored response. */
  response: GatewayResponse | undefined;
  /** Tells the audit record what the cache did (`hit`, `miss`, `bypass`...). */
  fact(outcome: string): void;
  /**
   * Sends the request on, below the cache; with `validators`, these in place of the client's
   * conditions (RFC 9111 section 4.3.1). Resolves once `response` is set.
   */
  forward(validators?: Validators): Promise<void>;
  /** Calls `listener` once the client's response has closed (sent, or the client gone). */
  onClosed(listener: () => void): void;
  /**
   * The same request with `validators`, through what is below the cache, on a fork of it: a
   * side call that never touches this exchange's response. Rejects when it brought no answer
   * from the upstream (a refusal or an upstream failure).
   */
  sideCall(validators: Validators): Promise<GatewayResponse>;
}
