/**
 * The cache stage: between rate-limit and the proxy. Answers GET and HEAD from stored
 * responses when RFC 9111 allows, revalidates stale ones with their validators, stores what
 * may be stored while streaming it to the client, invalidates after successful unsafe
 * requests. The service's instructions to this cache never reach the client: the response
 * writer strips them from every answer (edge/respond.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { HttpProblem } from '../../shared/errors.ts';
import type { GatewayContext, GatewayResponse, Next, Stage } from '../pipeline/context.ts';
import type { Forward } from '../upstream/forward.ts';
import { ownCopy, teeBody } from '../cache/flight/body-tee.ts';
import { appendCacheStatus, formatCacheStatus, type CacheStatus } from '../cache/answer/cache-status.ts';
import type { CacheRequest, Fill, HttpCache, Outcome, StoredResponse } from '../cache/http-cache.ts';
import { createCollapseMiss } from '../cache/flight/collapse.ts';
import { SAFE_METHODS, invalidationTargets } from '../cache/rules/invalidation-targets.ts';
import { keepPiece } from '../cache/flight/range-pieces.ts';
import {
  discard,
  revalidateInBackground,
  setValidators,
  validatorsOf,
} from '../cache/flight/revalidation.ts';
import { storedAnswer } from '../cache/answer/stored-answer.ts';

/** A stored response being revalidated, and why. */
interface Revalidation {
  entry: StoredResponse;
  reason: 'stale' | 'request';
}

/**
 * The cache stage over one cache instance; goes between rate-limit and the proxy. `forward`
 * is the proxy's own forwarding, for revalidations in the background.
 */
export function createCacheStage(cache: HttpCache, forward: Forward): Stage {
  const collapseMiss = createCollapseMiss(cache);
  return async function serve(ctx, next) {
    const method = ctx.req.method ?? 'GET';
    if (!SAFE_METHODS.has(method)) return unsafe(ctx, next, cache);
    const bypass = bypassReason(ctx, method, cache);
    if (bypass !== undefined) return bypassed(ctx, next, cache, method, bypass);
    const request = cache.describe(
      method,
      ctx.target,
      ctx.path,
      selectingFields(ctx),
      ctx.upstream.principal,
    );
    const selection = cache.select(request);
    // Ranges are answered from a fresh complete stored response only (stored-answer.ts);
    // otherwise the request goes upstream as it came. With nothing stored, a 206 may become
    // a piece of a stored response (3.4); a stale one is left to the next full request.
    if (method === 'GET' && request.headers.range !== undefined && selection.kind !== 'fresh')
      return selection.kind === 'uri-miss' || selection.kind === 'vary-miss'
        ? forwardRange(ctx, next, cache, request)
        : bypassed(ctx, next, cache, method, 'range');
    switch (selection.kind) {
      case 'fresh':
        note(ctx, cache, 'hit');
        ctx.response = storedAnswer(selection.entry, request, { hit: true });
        return;
      case 'stale-while-revalidate':
        cache.record('hit');
        note(ctx, cache, 'stale');
        ctx.response = storedAnswer(selection.entry, request, {
          hit: true,
          detail: 'stale-while-revalidate',
        });
        revalidateInBackground(ctx, forward, cache, request, selection.entry);
        return;
      case 'revalidate':
        onlyIfCached(request);
        return forwardAndStore(ctx, next, cache, request, selection);
      default: {
        onlyIfCached(request);
        const miss = selection.kind;
        // Nothing to store and nobody to share it with: a miss that is never collapsed either.
        if (request.directives.has('no-store')) return forwardUnstored(ctx, next, cache, request, miss);
        // The same miss already on its way upstream: its stored answer, when it may serve this one.
        const shared = await collapseMiss(ctx, request, () =>
          forwardAndStore(ctx, next, cache, request, undefined, miss),
        );
        if (shared !== undefined) {
          note(ctx, cache, 'hit');
          ctx.response = storedAnswer(shared, request, { hit: true, detail: 'collapsed' });
        }
        return;
      }
    }
  };
}

async function bypassed(
  ctx: GatewayContext,
  next: Next,
  cache: HttpCache,
  method: string,
  reason: string,
): Promise<void> {
  ctx.facts.cache = 'bypass';
  if (reason !== 'route') cache.record('bypass');
  await next();
  finish(ctx.response, { fwd: method === 'GET' || method === 'HEAD' ? 'bypass' : 'method', detail: reason });
}

/** A range request with nothing stored: forwarded as it came, its 206 kept as a piece when it may be. */
async function forwardRange(
  ctx: GatewayContext,
  next: Next,
  cache: HttpCache,
  request: CacheRequest,
): Promise<void> {
  ctx.facts.cache = 'bypass';
  cache.record('bypass');
  const fill = cache.beginFill(request.path);
  let kept = false;
  try {
    await next();
    const response = ctx.response;
    if (response !== undefined && response.problem === undefined)
      kept = keepPiece(cache, request, fill, response);
  } finally {
    if (!kept) fill.end();
  }
  finish(ctx.response, { fwd: 'bypass', detail: 'range' });
}

/**
 * The fields the cache selects and stores variants on: the client's, with the Accept-Encoding
 * the negotiate-encoding stage chose for the upstream (one spelling per choice, so three
 * variants a resource rather than one per client's spelling). The client's own object while
 * the two agree; a copy where they differ, since the client's fields are never written.
 */
function selectingFields(ctx: GatewayContext): IncomingHttpHeaders {
  const client = ctx.req.headers;
  const negotiated = ctx.upstream.headers.get('accept-encoding');
  if (negotiated === client['accept-encoding']) return client;
  return { ...client, 'accept-encoding': negotiated };
}

function bypassReason(ctx: GatewayContext, method: string, cache: HttpCache): string | undefined {
  if (!cache.config.enabled || ctx.upstream.route?.cache !== true) return 'route';
  if (method !== 'GET' && method !== 'HEAD') return 'method';
  if (!cache.available()) return 'invalidation-offline';
  const headers = ctx.req.headers;
  // 4.3.2: preconditions that only the origin can evaluate are its business.
  if (headers['if-match'] !== undefined || headers['if-unmodified-since'] !== undefined)
    return 'precondition';
  return undefined;
}

/** 5.2.1.7: only-if-cached and nothing usable stored → 504. */
function onlyIfCached(request: CacheRequest): void {
  if (request.directives.has('only-if-cached'))
    throw new HttpProblem('ERR_GATEWAY_TIMEOUT', 'only-if-cached: no stored response can be used', {
      headers: { 'Cache-Status': formatCacheStatus({ detail: 'only-if-cached' }) },
    });
}

async function unsafe(ctx: GatewayContext, next: Next, cache: HttpCache): Promise<void> {
  await next();
  const response = ctx.response;
  if (response === undefined) return;
  // 4.4: a non-error status means the state changed; unknown methods count as unsafe.
  if (response.status >= 200 && response.status < 400) {
    await cache.invalidate(invalidationTargets(ctx.path, ctx.target, ctx.req.headers.host, response.headers));
    ctx.facts.cache = 'invalidated';
  } else ctx.facts.cache = 'bypass';
  finish(
    response,
    ctx.upstream.route?.cache === true ? { fwd: 'method' } : { fwd: 'bypass', detail: 'route' },
  );
}

async function forwardAndStore(
  ctx: GatewayContext,
  next: Next,
  cache: HttpCache,
  request: CacheRequest,
  revalidation: Revalidation | undefined,
  miss: 'uri-miss' | 'vary-miss' = 'uri-miss',
): Promise<void> {
  const fwd = revalidation === undefined ? miss : revalidation.reason === 'request' ? 'request' : 'stale';
  if (revalidation !== undefined)
    setValidators(ctx.upstream.headers, validatorsOf(revalidation.entry, request));
  const fill = cache.beginFill(request.path);
  try {
    await next();
  } catch (error) {
    fill.end();
    throw error;
  }
  const response = ctx.response;
  if (response === undefined) {
    fill.end();
    return;
  }
  if (response.problem !== undefined) {
    fill.end();
    answerOriginError(ctx, cache, request, revalidation, response, fwd);
    return;
  }
  if (revalidation !== undefined) {
    if (response.status === 304) {
      response.body?.resume();
      fill.end();
      const why = revalidation.reason === 'request' ? 'request' : 'stale';
      return answerRevalidated(ctx, cache, request, revalidation, fill, response, why);
    }
    if (response.status >= 500 && revalidation.reason === 'stale' && staleIfError(revalidation.entry)) {
      discard(response.body);
      fill.end();
      note(ctx, cache, 'stale');
      ctx.response = storedAnswer(revalidation.entry, request, {
        fwd: 'stale',
        fwdStatus: response.status,
        detail: 'stale-if-error',
      });
      return;
    }
    supersede(cache, request, revalidation.entry, fill, response);
  }
  note(ctx, cache, 'miss');
  const semantics = cache.semantics(response.headers);
  const decision = cache.decide(request, fill, {
    status: response.status,
    headers: response.headers,
    semantics,
  });
  const status: CacheStatus = { fwd, fwdStatus: response.status };
  if (!decision.store) {
    fill.end();
    appendCacheStatus(response.headers, { ...status, detail: decision.reason });
    return;
  }
  // `stored` is said only of an answer already in the store when its head goes out: one whole
  // in memory (forward.ts) and taken by the store. A streamed body is stored only once it has
  // ended whole, after its head is gone: an upstream cut, a client gone or the entry limit may
  // still leave it unstored, so its head does not claim it (RFC 9211 `stored` states a fact).
  let stored = false;
  const buffered = response.bufferedBody;
  if (buffered !== undefined) {
    if (buffered.length <= cache.config.maxEntryBytes)
      stored = cache.commit(fill, decision.build(ownCopy([buffered], buffered.length)));
    fill.end();
  } else if (response.body === null) {
    stored = cache.commit(fill, decision.build(Buffer.alloc(0)));
    fill.end();
  } else {
    response.body = teeBody(
      response.body,
      cache.config.maxEntryBytes,
      (body) => cache.commit(fill, decision.build(body)),
      () => fill.end(),
    );
  }
  appendCacheStatus(response.headers, { ...status, stored });
}

/**
 * A full response to a revalidation: a HEAD 200 updates the stored GET response, or drops it
 * when they disagree (4.3.5); any other replaces it, whether or not it may be stored itself.
 */
function supersede(
  cache: HttpCache,
  request: CacheRequest,
  entry: StoredResponse,
  fill: Fill,
  response: GatewayResponse,
): void {
  if (request.method === 'HEAD' && response.status === 200)
    cache.updateFromHead(entry, request, fill, {
      status: 200,
      headers: response.headers,
      semantics: cache.semantics(response.headers),
    });
  else if (response.status < 500) cache.remove(entry);
}

/**
 * A miss whose answer may not be stored whatever it says (the request's no-store, 5.2.1.5):
 * forwarded without joining a fill and without reading the response's caching semantics, which
 * nothing would use. The client sees the same Cache-Status as when the store was refused.
 */
async function forwardUnstored(
  ctx: GatewayContext,
  next: Next,
  cache: HttpCache,
  request: CacheRequest,
  fwd: CacheStatus['fwd'],
): Promise<void> {
  await next();
  const response = ctx.response;
  if (response === undefined) return;
  if (response.problem !== undefined) {
    answerOriginError(ctx, cache, request, undefined, response, fwd);
    return;
  }
  note(ctx, cache, 'miss');
  appendCacheStatus(response.headers, { fwd, fwdStatus: response.status, detail: 'request-no-store' });
}

/**
 * The origin could not be reached (the proxy's 502 or 504, or a refusal after this stage):
 * RFC 9111 section 4.2.4 lets a disconnected cache serve stale unless must-revalidate,
 * proxy-revalidate, no-cache or s-maxage forbid it; stale-if-error (RFC 5861 section 4) says
 * so explicitly. Not when the client itself asked for validation (no-cache, max-age=0): it
 * gets the error.
 */
function answerOriginError(
  ctx: GatewayContext,
  cache: HttpCache,
  request: CacheRequest,
  revalidation: Revalidation | undefined,
  response: GatewayResponse,
  fwd: CacheStatus['fwd'],
): void {
  if (
    revalidation?.reason === 'stale' &&
    response.status >= 500 &&
    !revalidation.entry.semantics.neverStale
  ) {
    const entry = revalidation.entry;
    note(ctx, cache, 'stale');
    ctx.response = storedAnswer(entry, request, {
      fwd: 'stale',
      detail: staleIfError(entry) ? 'stale-if-error' : 'origin-unreachable',
    });
    return;
  }
  response.headers['cache-status'] = formatCacheStatus({ fwd, detail: 'origin-error' });
}

function answerRevalidated(
  ctx: GatewayContext,
  cache: HttpCache,
  request: CacheRequest,
  revalidation: Revalidation,
  fill: Fill,
  response: GatewayResponse,
  fwd: 'stale' | 'request',
): void {
  const semantics = cache.semantics(response.headers);
  const updated = cache.freshen(revalidation.entry, request, fill, {
    status: 304,
    headers: response.headers,
    semantics,
  });
  note(ctx, cache, 'revalidated');
  // A 304 that selects no stored response (4.3.4) still says the origin has nothing newer
  // than what we sent it; like http-cache-semantics, the old body is the only one to serve.
  ctx.response = storedAnswer(updated ?? revalidation.entry, request, {
    fwd,
    fwdStatus: 304,
    ...(updated === undefined ? { detail: 'validator-mismatch' } : {}),
  });
}

function staleIfError(entry: StoredResponse): boolean {
  const { policy, semantics } = entry;
  return !semantics.neverStale && policy.maxAge() + semantics.staleIfError > policy.age();
}

/** Counts the outcome and tells the audit record (ctx.facts). */
function note(ctx: GatewayContext, cache: HttpCache, outcome: Outcome): void {
  cache.record(outcome);
  ctx.facts.cache = outcome;
}

function finish(response: GatewayResponse | undefined, status: CacheStatus): void {
  if (response === undefined) return;
  appendCacheStatus(response.headers, status);
}
