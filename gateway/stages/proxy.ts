/**
 * Terminal stage: forwards the request to the route's upstream over a pooled keep-alive
 * connection and hands the upstream's response back, both bodies streamed, never buffered.
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { Type, type Static } from '@sinclair/typebox';
import { HttpProblem } from '../../shared/errors.ts';
import { IDENTITY_HEADER, signAssertion, type AssertionKey } from '../../shared/identity-assertion.ts';
import { hopByHopNames } from '../http-hygiene.ts';
import type { GatewayMetrics, UpstreamErrorKind } from '../metrics.ts';
import { ClientGoneError, type GatewayContext, type Stage } from '../pipeline.ts';
import { readLimitedBody, tooLarge } from '../request-body.ts';
import type { Upstreams } from '../upstreams.ts';
import { REQUEST_ID_HEADER } from './request-id.ts';

export const ProxyConfigSchema = Type.Object(
  {
    trustProxy: Type.Boolean({
      default: false,
      description:
        'Off: Forwarded and X-Forwarded-* sent by the client are dropped and replaced with what this ' +
        'gateway saw. On (only behind a load balancer that sets them): the incoming values are kept and ' +
        'this hop is appended.',
    }),
    connectionsPerUpstream: Type.Integer({
      minimum: 1,
      default: 128,
      description: 'Most connections the pool opens to one upstream origin.',
    }),
    connectTimeoutMs: Type.Integer({
      minimum: 1,
      default: 5000,
      description: 'Time to open an upstream connection before answering 504.',
    }),
    responseTimeoutMs: Type.Integer({
      minimum: 1,
      default: 30000,
      description: 'Time for the upstream to send its response headers before answering 504.',
    }),
    bodyTimeoutMs: Type.Integer({
      minimum: 1,
      default: 30000,
      description:
        'Longest pause between two chunks of the upstream response body; past it the response is cut.',
    }),
    keepAliveTimeoutMs: Type.Integer({
      minimum: 1,
      default: 4000,
      description: 'How long an idle upstream connection is kept (the upstream may announce less).',
    }),
    retries: Type.Integer({
      minimum: 0,
      maximum: 3,
      default: 1,
      description:
        'Retries after a connection failure, only for idempotent methods without a request body ' +
        '(a streamed body cannot be replayed without buffering it).',
    }),
  },
  { additionalProperties: false, default: {}, description: 'Upstream forwarding.' },
);
export type ProxyConfig = Static<typeof ProxyConfigSchema>;

export interface ProxyDeps {
  upstreams: Upstreams;
  metrics: GatewayMetrics;
  /** Request body limit, from the listener's limits. */
  maxBodyBytes: number;
  /** Ring of assertion keys; the first signs. Needed once an authenticate stage sets principals. */
  assertionKeys?: readonly AssertionKey[];
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);
const RETRIABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);
/** Never forwarded from the client: identity and forwarding facts are ours to state. */
const CLIENT_FORWARDING = new Set(['forwarded', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host']);
/** Not forwarded: `host` is the upstream's, `expect` was answered here (100-continue). */
const NOT_FORWARDED = new Set(['host', 'expect', IDENTITY_HEADER, REQUEST_ID_HEADER, 'x-real-ip']);

export function createProxyStage(config: ProxyConfig, deps: ProxyDeps): Stage {
  if (deps.assertionKeys !== undefined && deps.assertionKeys.length === 0) {
    throw new Error('proxy: assertionKeys is empty; pass at least one key or none');
  }
  const signingKey = deps.assertionKeys?.[0];

  return async function proxy(ctx) {
    const route = ctx.route;
    if (route === undefined) throw new Error('proxy stage needs the route stage before it');
    const pool = deps.upstreams.pool(route.upstream);
    const method = ctx.req.method ?? 'GET';

    const declared = ctx.req.headers['content-length'];
    if (declared !== undefined && Number(declared) > deps.maxBodyBytes) {
      throw tooLarge(deps.maxBodyBytes);
    }
    const hasBody =
      (declared !== undefined && declared !== '0') || ctx.req.headers['transfer-encoding'] !== undefined;

    const headers = forwardedHeaders(ctx, config.trustProxy, ctx.principal !== undefined);
    if (ctx.principal !== undefined) {
      if (signingKey === undefined)
        throw new Error('proxy: a principal is set but no assertion key was given');
      headers.push(
        IDENTITY_HEADER,
        signAssertion(signingKey, ctx.principal, { method, target: ctx.target, requestId: ctx.requestId }),
      );
    }

    const body = hasBody ? await readLimitedBody(ctx.req, deps.maxBodyBytes) : null;
    // Whatever of the body the upstream did not take is read and dropped once the answer is
    // out, so the keep-alive that answer promised holds.
    if (body !== null) ctx.res.once('finish', () => body.discardRest());
    const retries = !hasBody && IDEMPOTENT.has(method) ? config.retries : 0;

    for (let attempt = 0; ; attempt++) {
      try {
        const upstream = await pool.request({
          path: ctx.target,
          method,
          headers,
          body: body?.stream ?? null,
          signal: ctx.signal,
        });
        // From here on the body may fail at any moment, also while no stage reads it: without
        // a listener its 'error' would be an uncaught exception that ends the process.
        upstream.body.on('error', ignore);
        if (upstream.statusCode < 200 || upstream.statusCode > 599) {
          upstream.body.destroy();
          throw new UpstreamFailure('malformed', new Error(`status ${upstream.statusCode}`));
        }
        // A HEAD response has no body to relay; draining the empty stream frees the connection.
        if (method === 'HEAD') upstream.body.resume();
        // Nothing is committed to the client before the first body byte (or the end) arrived:
        // an answer whose body fails at once is still a clean 502, not a cut connection.
        else await firstBytes(upstream.body);
        ctx.response = {
          status: upstream.statusCode,
          headers: responseHeaders(upstream.headers),
          body: method === 'HEAD' ? null : upstream.body,
        };
        return;
      } catch (caught) {
        if (caught instanceof HttpProblem) throw caught;
        const failure = body?.failure();
        if (failure !== undefined) throw failure;
        if (ctx.signal.aborted) throw new ClientGoneError();
        const error = caught instanceof UpstreamFailure ? caught.cause : caught;
        const code = (error as NodeJS.ErrnoException).code ?? '';
        if (attempt < retries && RETRIABLE_CODES.has(code)) {
          ctx.log.warn({ err: describe(error), attempt: attempt + 1 }, 'retrying idempotent request');
          continue;
        }
        const kind = caught instanceof UpstreamFailure ? caught.kind : errorKind(error);
        deps.metrics.upstreamError(upstreamLabel(route.upstream), kind);
        ctx.log.warn(
          { err: describe(error), upstream: upstreamLabel(route.upstream), kind },
          'upstream failed',
        );
        throw upstreamProblem(kind);
      }
    }
  };
}

/** An upstream answer found unusable after undici accepted it (status out of range). */
class UpstreamFailure extends Error {
  readonly kind: UpstreamErrorKind;
  override readonly cause: unknown;
  constructor(kind: UpstreamErrorKind, cause: unknown) {
    super('upstream answer unusable');
    this.kind = kind;
    this.cause = cause;
  }
}

function ignore(): void {}

/**
 * Waits until the body has a first chunk buffered, or ended, without taking anything out of
 * it; rejects with the body's error when it fails first.
 */
function firstBytes(body: Readable): Promise<void> {
  if (body.readableLength > 0 || body.readableEnded) return Promise.resolve();
  if (body.errored !== null) return Promise.reject(body.errored);
  return new Promise((resolve, reject) => {
    const settle = (error?: Error) => {
      body.off('readable', onReadable);
      body.off('end', onEnd);
      body.off('error', settle);
      body.off('close', onClose);
      if (error === undefined) resolve();
      else reject(error);
    };
    // 'readable' fires for data and for the end alike; `read(0)` fills the buffer without
    // consuming, so the stream still yields every byte to whoever reads it next.
    const onReadable = () => settle();
    const onEnd = () => settle();
    const onClose = () => settle(body.errored ?? new Error('upstream body closed before its first byte'));
    body.on('readable', onReadable);
    body.once('end', onEnd);
    body.once('error', settle);
    body.once('close', onClose);
  });
}

function upstreamLabel(upstream: string): string {
  return new URL(upstream).origin;
}

/**
 * The address of the peer this gateway talks to (what it states in X-Forwarded-For), for
 * stages that key on it, such as rate limiting.
 */
export function clientAddress(req: IncomingMessage): string {
  // A dual-stack listener reports IPv4 clients as `::ffff:a.b.c.d`; upstreams expect `a.b.c.d`.
  return (req.socket.remoteAddress ?? 'unknown').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
}

/**
 * `consumedCredential`: the gateway verified the caller's credential and asserts the principal
 * instead, so the token or API key itself goes no further than the edge (as Envoy's jwt_authn
 * does by default): an upstream log or a compromised service never sees a usable credential.
 */
function forwardedHeaders(ctx: GatewayContext, trustProxy: boolean, consumedCredential: boolean): string[] {
  const { req } = ctx;
  const drop = hopByHopNames(req.headers.connection);
  const out: string[] = [];
  const incoming = new Map<string, string[]>();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] ?? '').toLowerCase();
    const value = raw[i + 1] ?? '';
    if (drop.has(name) || NOT_FORWARDED.has(name)) continue;
    if (consumedCredential && name === 'authorization') continue;
    if (CLIENT_FORWARDING.has(name)) {
      if (trustProxy) incoming.set(name, [...(incoming.get(name) ?? []), value]);
      continue;
    }
    out.push(name, value);
  }

  const address = clientAddress(req);
  const host = req.headers.host ?? '';
  // RFC 7239: IPv6 addresses are bracketed and the node quoted.
  const node = address.includes(':') ? `"[${address}]"` : address;
  const forwarded = `for=${node};proto=https;host="${host.replaceAll('"', '')}"`;
  const append = (name: string, value: string) => [...(incoming.get(name) ?? []), value].join(', ');
  out.push(
    'forwarded',
    append('forwarded', forwarded),
    'x-forwarded-for',
    append('x-forwarded-for', address),
    'x-forwarded-proto',
    incoming.get('x-forwarded-proto')?.[0] ?? 'https',
    'x-forwarded-host',
    incoming.get('x-forwarded-host')?.[0] ?? host,
    REQUEST_ID_HEADER,
    ctx.requestId,
  );
  return out;
}

function responseHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const drop = hopByHopNames(headers['connection']);
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || drop.has(name)) continue;
    out[name] = value;
  }
  return out;
}

function errorKind(error: unknown): UpstreamErrorKind {
  const { code, name } = error as { code?: string; name?: string };
  switch (code) {
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return 'timeout';
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EAI_AGAIN':
      return 'refused';
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
    case 'UND_ERR_HEADERS_OVERFLOW':
    case 'UND_ERR_INFO':
      return 'malformed';
    default:
      return name === 'HTTPParserError' || code?.startsWith('HPE_') === true ? 'malformed' : 'reset';
  }
}

function upstreamProblem(kind: UpstreamErrorKind): HttpProblem {
  switch (kind) {
    case 'timeout':
      return new HttpProblem('ERR_GATEWAY_TIMEOUT', 'the upstream did not answer in time');
    case 'refused':
      return new HttpProblem('ERR_BAD_GATEWAY', 'the upstream refused the connection');
    case 'malformed':
      return new HttpProblem('ERR_BAD_GATEWAY', 'the upstream sent a malformed response');
    case 'reset':
      return new HttpProblem('ERR_BAD_GATEWAY', 'the upstream closed the connection without answering');
  }
}

/** Error facts for logs: no headers, bodies or URLs with credentials. */
function describe(error: unknown): { name?: string; code?: string; message?: string } {
  const { name, code, message } = error as { name?: string; code?: string; message?: string };
  return { name, code, message };
}
