/**
 * A request as the cache reads it: method, target, the client's own headers, who is calling
 * (the partitions it may read) and its Cache-Control.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Principal } from '../../../shared/principal.ts';
import { parseCacheControl, type Directives } from './directives.ts';
import { callerOf, type Caller } from './partition.ts';
import { requestView, type PolicyRequest } from './policy.ts';

/** One request, as the cache reads it . */
export interface CacheRequest {
  readonly method: string;
  readonly target: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly caller: Caller;
  readonly view: PolicyRequest;
  readonly directives: Directives;
}

/** What the cache is told of a request. */
export interface RequestInit {
  method: string;
  /** Path and query, as received. */
  target: string;
  /** Path without the query. */
  path: string;
  /** The client's own headers, never edited: its conditions are answered from them. */
  headers: IncomingHttpHeaders;
  principal?: Principal | undefined;
}

export function describeRequest(init: RequestInit): CacheRequest {
  return new DescribedRequest(init, callerOf(init.principal, init.headers));
}

/**
 * Its view for http-cache-semantics is made on first use: it copies and rewrites every header,
 * and a miss that is not stored (a request with no-store, an answer that may not be stored)
 * never reads it.
 */
class DescribedRequest implements CacheRequest {
  readonly method: string;
  readonly target: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly caller: Caller;
  readonly directives: Directives;
  #view: PolicyRequest | undefined = undefined;

  constructor(init: RequestInit, caller: Caller) {
    this.method = init.method;
    this.target = init.target;
    this.path = init.path;
    this.headers = init.headers;
    this.caller = caller;
    this.directives = parseCacheControl(init.headers['cache-control']);
  }

  get view(): PolicyRequest {
    this.#view ??= requestView(this.target, this.headers);
    return this.#view;
  }
}
