/**
 * Forwards one request to a target of its route over a pooled keep-alive connection and
 * returns the upstream's answer (upstream-call.ts): the request body streamed, the answer's
 * body whole when it came with the head, streamed otherwise. Used by the proxy
 * stage, and by the cache stage for a revalidation in the background (a side call: the
 * client's answer has gone already).
 *
 * The target is the balancer's pick (balancer.ts); a failed attempt goes to the retry policy
 * (retry-policy.ts), which may name another target. An answer that cannot be relayed is thrown
 * as a 502 or 504 problem while nothing has been committed to the client: nothing is returned
 * before the first body byte (or the end). A route with no target to take the request answers
 * 503 at once (circuit-breaker.ts).
 */
import { HttpProblem } from '../../shared/errors.ts';
import { IDENTITY_HEADER, signAssertion, type AssertionKey } from '../../shared/identity-assertion.ts';
import { readLimitedBody, tooLarge } from './request-body.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import {
  bufferedResponse,
  ClientGoneError,
  type GatewayContext,
  type GatewayResponse,
} from '../pipeline/context.ts';
import { nextExchangeId } from './answer-binding.ts';
import { pickMember } from './balancer.ts';
import { unavailableProblem } from './circuit-breaker.ts';
import type { ProxyConfig } from '../config/schema/upstream.ts';
import { forwardedHeaders, relayedHeaders, viaEntry } from './forwarded-headers.ts';
import { relayInterim } from './interim.ts';
import { relayableAnswer } from './relayable-answer.ts';
import { createRetryPolicy } from './retry-policy.ts';
import type { RouteUpstreams } from './route-upstreams.ts';
import { callUpstream, type UpstreamAnswer } from './upstream-call.ts';
import { errorKind, upstreamProblem, UpstreamFailure } from './upstream-errors.ts';
import type { UpstreamSet } from './upstream-set.ts';

export interface ForwardDeps {
  routes: RouteUpstreams;
  metrics: GatewayMetrics;
  /** Request body limit, from the listener's limits. */
  maxBodyBytes: number;
  /** Ring of assertion keys; the first signs. Needed once an authenticate stage sets principals. */
  assertionKeys?: readonly AssertionKey[];
}

export type Forward = (ctx: GatewayContext) => Promise<GatewayResponse>;

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);
const RETRIABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

export function createForward(config: ProxyConfig, deps: ForwardDeps): Forward {
  if (deps.assertionKeys !== undefined && deps.assertionKeys.length === 0) {
    throw new Error('proxy: assertionKeys is empty; pass at least one key or none');
  }
  const signingKey = deps.assertionKeys?.[0];
  const policy = createRetryPolicy(config, deps.routes);
  // Answers come from the upstream over HTTP/1.1 (pools.ts: no h2): our entry says so.
  const responseVia = viaEntry({ httpVersionMajor: 1, httpVersionMinor: 1 }, config.viaName);
  const unavailable = (set: UpstreamSet) => {
    const problem = unavailableProblem(set, config.circuitBreaker.retryAfterSeconds);
    deps.routes.metrics.unavailable(set.route, problem.code);
    return problem;
  };

  return async function forward(ctx) {
    const request = ctx.upstream;
    const route = request.route;
    if (route === undefined) throw new Error('forwarding needs the route stage before it');
    const set = deps.routes.of(route);
    const method = request.method;

    const declared = request.headers.get('content-length');
    if (declared !== undefined && Number(declared) > deps.maxBodyBytes) throw tooLarge(deps.maxBodyBytes);
    const hasBody = request.body !== null;

    const headers = upstreamHeaders(ctx, config, signingKey);
    let member = pickMember(set);
    if (member === undefined) throw unavailable(set);
    const body = request.body === null ? null : await readLimitedBody(request.body, deps.maxBodyBytes);
    // Whatever of the body the upstream did not take is read and dropped once the answer is
    // out, so the keep-alive that answer promised holds.
    if (body !== null) ctx.res.once('finish', () => body.discardRest());
    const retries = !hasBody && IDEMPOTENT.has(method) ? config.retries : 0;

    for (let attempt = 0; ; attempt++) {
      // Counted until the answer's head is in: the load the balancer and the breaker weigh.
      const target = member.target;
      target.outstanding++;
      set.active++;
      if (attempt > 0) set.retriesActive++;
      try {
        const checked = relayableAnswer(
          await callUpstream(target.pool, {
            path: request.target,
            method,
            headers,
            body: body?.stream ?? null,
            signal: ctx.signal,
            onInfo: relayInterim(ctx),
            exchangeId: target.echoes ? nextExchangeId() : undefined,
          }),
        );
        // Awaited only when it is a promise (a body still arriving): see relayable-answer.ts.
        const answer = checked instanceof Promise ? await checked : checked;
        const status = answer.statusCode;
        if (status < 500) member.consecutiveFailures = 0;
        else {
          const next = policy.afterServerError(ctx, set, member, status, answer.headers, attempt < retries);
          if (next !== undefined) {
            answer.stream?.resume();
            member = next;
            continue;
          }
        }
        return responseOf(status, answer, responseVia);
      } catch (caught) {
        if (caught instanceof HttpProblem) throw caught;
        const failure = body?.failure();
        if (failure !== undefined) throw failure;
        if (ctx.signal.gone) throw new ClientGoneError();
        const error = caught instanceof UpstreamFailure ? caught.cause : caught;
        const kind = caught instanceof UpstreamFailure ? caught.kind : errorKind(error);
        const code = (error as NodeJS.ErrnoException).code ?? '';
        const mayRetry = attempt < retries && RETRIABLE_CODES.has(code);
        const next = policy.afterFailure(ctx, set, member, kind, mayRetry);
        if (next !== undefined) {
          member = next;
          continue;
        }
        deps.metrics.upstreamError(member.url, kind);
        ctx.log.warn({ err: describe(error), upstream: member.url, kind }, 'upstream failed');
        throw upstreamProblem(kind);
      } finally {
        target.outstanding--;
        set.active--;
        if (attempt > 0) set.retriesActive--;
      }
    }
  };
}

/**
 * The request's headers as they go upstream: forwarding fields, and the principal asserted.
 * The WebSocket relay sends its handshake upstream with the same (gateway/websocket/).
 */
export function upstreamHeaders(
  ctx: GatewayContext,
  config: Pick<ProxyConfig, 'trustProxy' | 'viaName'>,
  signingKey: AssertionKey | undefined,
): string[] {
  // The credential itself never goes upstream (forwarded-headers.ts); the principal, where
  // there is one, goes as the gateway's signed assertion.
  const headers = forwardedHeaders(ctx.upstream, ctx.req, config.trustProxy, config.viaName);
  const { principal, method, target, correlationId } = ctx.upstream;
  if (principal !== undefined) {
    if (signingKey === undefined) throw new Error('proxy: a principal is set but no assertion key was given');
    // The same id as the X-Request-Id sent with it, so the service's logs match the client's.
    const requestId = correlationId;
    headers.push(IDENTITY_HEADER, signAssertion(signingKey, principal, { method, target, requestId }));
  }
  return headers;
}

/** The upstream's answer as the pipeline relays it (its first body bytes are in). */
function responseOf(status: number, answer: UpstreamAnswer, via: string): GatewayResponse {
  const relayed = relayedHeaders(answer.headers, via);
  if (answer.whole !== undefined) return bufferedResponse(status, relayed, answer.whole);
  // A HEAD answer has no body to relay.
  return { status, headers: relayed, body: answer.stream };
}

/** Error facts for logs: no headers, bodies or URLs with credentials. */
function describe(error: unknown): {
  name?: string | undefined;
  code?: string | undefined;
  message?: string | undefined;
} {
  const { name, code, message } = error as { name?: string; code?: string; message?: string };
  return { name, code, message };
}
