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
  /** The authority the client addressed, normalised (`normalAuthority`): part of the key. */
  readonly authority: string;
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
  /** The authority the gateway forwards upstream (an absolute-form target's, else Host's). */
  authority: string;
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
  readonly authority: string;
  readonly target: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly caller: Caller;
  readonly directives: Directives;
  #view: PolicyRequest | undefined = undefined;

  constructor(init: RequestInit, caller: Caller) {
    this.method = init.method;
    this.authority = normalAuthority(init.authority);
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

/**
 * The authority the client named (an absolute-form target's, else Host, or HTTP/2's :authority
 * copied to host at the edge), as the key holds it: the same origin under one spelling (RFC
 * 3986 section 6.2.2.1: the host is case-insensitive; 6.2.3: a default port is the same as none). The gateway forwards this authority upstream
 * (X-Forwarded-Host, Forwarded: host=), where it may shape the answer, so the key holds it.
 */
export function normalAuthority(host: string | undefined): string {
  const lower = (host ?? '').trim().toLowerCase();
  return lower.endsWith(':443') ? lower.slice(0, -4) : lower;
}
