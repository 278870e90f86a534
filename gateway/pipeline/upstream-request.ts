/**
 * The request the proxy sends upstream, as the stages leave it: the one object a stage edits
 * to change what goes upstream, and the only one the proxy (upstream/forward.ts) reads for it.
 *
 * - `route`: which upstreams take it (the route stage); `target`: the path and query sent
 *   (the route stage rewrites its prefix when the route says); `authority`: the host the
 *   client named (an absolute-form target's, else Host's).
 * - `headers`: the client's fields as stages edited them (upstream-headers.ts).
 * - `principal`: who the gateway says is calling (the authenticate stage), asserted upstream
 *   in a signed header; `requestId` (the request-id stage) and `clientIp` go up as fields too.
 * - `body`: the client's body, streamed up as it arrives; null when the request has none.
 *
 * A class whose constructor sets every field, the ones stages fill in later too: every
 * request's object has one shape, so the stages' and the proxy's reads stay monomorphic.
 * What no stage changes today is readonly; make a field writable when a stage must change it.
 */
import type { Readable } from 'node:stream';
import type { Principal } from '../../shared/principal.ts';
import type { RouteDefinition } from '../config/schema/routes.ts';
import type { ClientRequest } from './client-request.ts';
import { UpstreamHeaders } from './upstream-headers.ts';

/** The client's body as the proxy streams it: Node's request, read as a stream only. */
export type RequestBody = Readable & { readonly complete: boolean };

export class UpstreamRequest {
  /** The client's method: the gateway forwards it as it came. */
  readonly method: string;
  /**
   * Path and query sent upstream: as received (an absolute-form target's), unless the route
   * stage rewrote its prefix (`stripPrefix`, `rewrite`). `ctx.target` keeps the client's,
   * which the cache keys on.
   */
  target: string;
  /**
   * The host the client named, as the forwarding fields state it: an absolute-form target's
   * authority, which then takes the place of Host (RFC 9112 section 3.2.2), else Host (`:authority`
   * over HTTP/2); empty when there was none.
   */
  readonly authority: string;
  /** The route whose upstreams take the request; set by the route stage. */
  route: RouteDefinition | undefined;
  readonly headers: UpstreamHeaders;
  /** Set by the authenticate stage; asserted upstream, and what limits and the cache key on. */
  principal: Principal | undefined;
  /**
   * Set by the request-id stage (first): the gateway's own id, unique per request, which the
   * request log and the audit record are keyed by.
   */
  requestId: string;
  /**
   * The client's own well-formed X-Request-Id, when kept (`requestId.acceptFromClient`): it is
   * echoed and sent upstream for correlation, and logged beside `requestId`, never instead of it,
   * since any client may send any id, another request's included.
   */
  clientRequestId: string | undefined;
  /** The client's address as limits and the audit count it (edge/client-ip.ts), found once. */
  readonly clientIp: string;
  readonly body: RequestBody | null;

  constructor(
    method: string,
    target: string,
    authority: string,
    headers: UpstreamHeaders,
    clientIp: string,
    body: RequestBody | null,
  ) {
    this.method = method;
    this.target = target;
    this.authority = authority;
    this.route = undefined;
    this.headers = headers;
    this.principal = undefined;
    this.requestId = '';
    this.clientRequestId = undefined;
    this.clientIp = clientIp;
    this.body = body;
  }

  /** The id the client and the upstream see: the client's own when kept, else the gateway's. */
  get correlationId(): string {
    return this.clientRequestId ?? this.requestId;
  }

  /**
   * The request as the client sent it, before any stage; `authority` is an absolute-form
   * target's (foundation/request-target.ts), undefined for Host's.
   */
  static of(
    req: ClientRequest,
    target: string,
    authority: string | undefined,
    clientIp: string,
    body: RequestBody | null,
  ): UpstreamRequest {
    const headers = new UpstreamHeaders(req.rawHeaders, req.headers);
    const named = authority ?? req.headers.host ?? '';
    return new UpstreamRequest(req.method ?? 'GET', target, named, headers, clientIp, body);
  }

  /**
   * The same request for a side call made on its behalf once its answer is out (a background
   * revalidation): what stages set is kept, header edits are copied (the side call's own edits
   * stay its own), and there is no body, which went to the first call already.
   */
  fork(): UpstreamRequest {
    const fork = new UpstreamRequest(
      this.method,
      this.target,
      this.authority,
      this.headers.copy(),
      this.clientIp,
      null,
    );
    fork.route = this.route;
    fork.principal = this.principal;
    fork.requestId = this.requestId;
    fork.clientRequestId = this.clientRequestId;
    return fork;
  }
}
