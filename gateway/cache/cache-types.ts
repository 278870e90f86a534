/**
 * The shapes the cache and its stage exchange: a request as the cache reads it, what it can do
 * for it, a fill on its way upstream, and the decision to store what came back.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Directives } from './rules/directives.ts';
import type { StoredResponse } from './store/entry-store.ts';
import type { Caller } from './rules/partition.ts';
import type { PolicyRequest } from './rules/policy.ts';
import type { ResponseSemantics } from './rules/response-semantics.ts';

/** One request, as the cache reads it. */
export interface CacheRequest {
  readonly method: string;
  readonly target: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly caller: Caller;
  readonly view: PolicyRequest;
  readonly directives: Directives;
}

/** What the cache can do for a request (RFC 9111 section 4). */
export type Selection =
  | { kind: 'uri-miss' | 'vary-miss' }
  | { kind: 'fresh'; entry: StoredResponse }
  | { kind: 'stale-while-revalidate'; entry: StoredResponse }
  /** `stale`: past its freshness; `request`: the request's directives forbid reuse (5.2.1). */
  | { kind: 'revalidate'; entry: StoredResponse; reason: 'stale' | 'request' };

/** A request on its way upstream whose response may be stored, unless invalidated meanwhile. */
export interface Fill {
  readonly path: string;
  readonly requestTime: number;
  poisoned: boolean;
  end(): void;
}

/** A response from upstream, as the storing rules read it. */
export interface ReceivedResponse {
  status: number;
  headers: Record<string, string | string[]>;
  semantics: ResponseSemantics;
}

/** Whether a response will be stored, and how to build the entry once its body is complete. */
export type StoreDecision =
  | { store: true; partition: string; key: string; build: (body: Buffer) => StoredResponse }
  | { store: false; reason: string };
