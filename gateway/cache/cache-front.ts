/**
 * The cache in front of the upstream, for one request at a time: answers GET and HEAD from
 * stored responses when RFC 9111 allows, revalidates stale ones with their validators, stores
 * what may be stored while streaming it to the client, invalidates after successful unsafe
 * requests. It reads the request and reaches the upstream through an `Exchange`
 * (exchange.ts), which the cache stage makes of the pipeline's context.
 */
import { HttpProblem } from '../../shared/errors.ts';
import type { GatewayResponse } from '../pipeline/context.ts';
import { appendCacheStatus, formatCacheStatus, type CacheStatus } from './answer/cache-status.ts';
import { ClientFields } from './answer/client-fields.ts';
import { storedAnswer } from './answer/stored-answer.ts';
import type { Outcome } from './engine/cache-stats.ts';
import type { CacheRequest, Selection } from './engine/cache-types.ts';
import type { Exchange } from './flight/exchange.ts';
import { discard, settleAnswer, settleUnstored, type Revalidation, type Settled } from './flight/answer.ts';
import { createCollapseMiss, type CollapseMiss } from './flight/collapse.ts';
import { completeWith, keepPiece } from './flight/range-pieces.ts';
import { revalidateInBackground, validatorsOf } from './flight/revalidation.ts';
import type { HttpCache } from './engine/http-cache.ts';
import { describeRequest } from './rules/cache-request.ts';
import { gatewayOnlyFields } from './rules/gateway-fields.ts';
import { SAFE_METHODS, invalidationTargets } from './rules/invalidation-targets.ts';

export class CacheFront {
  readonly #cache: HttpCache;
  readonly #collapseMiss: CollapseMiss;
  readonly #fields: ClientFields;

  constructor(cache: HttpCache) {
    this.#cache = cache;
    this.#collapseMiss = createCollapseMiss(cache);
    this.#fields = new ClientFields(gatewayOnlyFields(cache.config.targetedFields));
  }

  /** Handles one request: `exchange.response` is its answer once this resolves. */
  async serve(exchange: Exchange): Promise<void> {
    const { method } = exchange;
    if (!SAFE_METHODS.has(method)) return this.#unsafe(exchange);
    const bypass = this.#bypassReason(exchange);
    if (bypass !== undefined) return this.#bypassed(exchange, bypass);
    const request = describeRequest(exchange);
    const selection = this.#cache.lookup(request);
    // Ranges are answered from a fresh complete stored response only (stored-answer.ts);
    // otherwise the request goes upstream as it came. With nothing stored, a 206 may become
    // a piece of a stored response (3.4); a stale one is left to the next full request.
    if (method === 'GET' && request.headers.range !== undefined && selection.kind !== 'fresh')
      return selection.kind === 'uri-miss' || selection.kind === 'vary-miss'
        ? this.#forwardRange(exchange, request)
        : this.#bypassed(exchange, 'range');
    if (
      (selection.kind === 'uri-miss' || selection.kind === 'vary-miss') &&
      (await this.#completeHeld(exchange, request, selection.kind))
    )
      return;
    return this.#answer(exchange, request, selection);
  }

  /**
   * A GET of a whole representation whose first bytes are held as 206 pieces (RFC 9111 sections
   * 3.3, 3.4): only the rest is asked for, with If-Range so that a changed representation comes
   * back whole. True when answered so; false to go upstream as usual (nothing held, a request
   * with conditions or no-store, or an answer that is neither the rest nor the whole).
   */
  async #completeHeld(
    exchange: Exchange,
    request: CacheRequest,
    miss: 'uri-miss' | 'vary-miss',
  ): Promise<boolean> {
    const { headers } = request;
    if (exchange.method !== 'GET' || exchange.hasBody || headers.range !== undefined) return false;
    if (['if-none-match', 'if-modified-since', 'if-range'].some((name) => headers[name] !== undefined))
      return false;
    if (request.directives.has('no-store') || request.directives.has('only-if-cached')) return false;
    const held = this.#cache.heldPrefix(request);
    if (held === undefined) return false;
    const fill = this.#cache.openFill(request.path);
    let answer: GatewayResponse;
    try {
      answer = await exchange.sideCall({ range: `bytes=${held.bytes.length}-`, 'if-range': held.validator });
    } catch {
      fill.end();
      return false;
    }
    const whole = answer.status === 200 && answer.problem === undefined ? answer : completeWith(held, answer);
    if (whole === undefined) {
      discard(answer.body);
      fill.end();
      return false;
    }
    exchange.response = whole;
    const settled = await settleAnswer(this.#cache, request, fill, undefined, whole, miss, 'client');
    this.#settle(exchange, request, settled);
    return true;
  }

  async #answer(exchange: Exchange, request: CacheRequest, selection: Selection): Promise<void> {
    switch (selection.kind) {
      case 'fresh':
        this.#note(exchange, 'hit');
        exchange.response = storedAnswer(selection.entry, request, { hit: true }, this.#fields);
        return;
      case 'stale-while-revalidate':
        this.#cache.record('hit');
        this.#note(exchange, 'stale');
        exchange.response = storedAnswer(
          selection.entry,
          request,
          { hit: true, detail: 'stale-while-revalidate' },
          this.#fields,
        );
        revalidateInBackground(exchange, this.#cache, request, selection.entry);
        return;
      case 'revalidate':
        onlyIfCached(request);
        await this.#forwardAndStore(exchange, request, selection);
        return;
      default: {
        onlyIfCached(request);
        const miss = selection.kind;
        // Nothing to store and nobody to share it with: a miss that is never collapsed either.
        if (request.directives.has('no-store')) return this.#forwardUnstored(exchange, miss);
        // The same miss already on its way upstream: its stored answer, when it may serve this one.
        const shared = await this.#collapseMiss(exchange, request, () =>
          this.#forwardAndStore(exchange, request, undefined, miss),
        );
        if (shared !== undefined) {
          this.#note(exchange, 'hit');
          exchange.response = storedAnswer(shared, request, { hit: true, detail: 'collapsed' }, this.#fields);
        }
        return;
      }
    }
  }

  #bypassReason(exchange: Exchange): string | undefined {
    const { method } = exchange;
    if (!this.#cache.config.enabled || !exchange.cacheable) return 'route';
    if (method !== 'GET' && method !== 'HEAD') return 'method';
    if (!this.#cache.available()) return 'invalidation-offline';
    const headers = exchange.headers;
    // 4.3.2: preconditions that only the origin can evaluate are its business.
    if (headers['if-match'] !== undefined || headers['if-unmodified-since'] !== undefined)
      return 'precondition';
    return undefined;
  }

  async #bypassed(exchange: Exchange, reason: string): Promise<void> {
    exchange.fact('bypass');
    if (reason !== 'route') this.#cache.record('bypass');
    await exchange.forward();
    const safe = exchange.method === 'GET' || exchange.method === 'HEAD';
    finish(exchange, { fwd: safe ? 'bypass' : 'method', detail: reason });
  }

  /** A range request with nothing stored: forwarded as it came, its 206 kept as a piece when it may be. */
  async #forwardRange(exchange: Exchange, request: CacheRequest): Promise<void> {
    exchange.fact('bypass');
    this.#cache.record('bypass');
    const fill = this.#cache.openFill(request.path);
    let kept = false;
    try {
      await exchange.forward();
      const response = exchange.response;
      if (response !== undefined && response.problem === undefined)
        kept = keepPiece(this.#cache, request, fill, response);
    } finally {
      if (!kept) fill.end();
    }
    finish(exchange, { fwd: 'bypass', detail: 'range' });
  }

  async #unsafe(exchange: Exchange): Promise<void> {
    await exchange.forward();
    const response = exchange.response;
    if (response === undefined) return;
    // 4.4: a non-error status means the state changed; unknown methods count as unsafe.
    if (response.status >= 200 && response.status < 400) {
      const { path, target, authority } = exchange;
      await this.#cache.invalidate(invalidationTargets(path, target, authority, response.headers));
      exchange.fact('invalidated');
      if (await this.#keepPostAnswer(exchange, response)) return;
    } else exchange.fact('bypass');
    finish(exchange, exchange.cacheable ? { fwd: 'method' } : { fwd: 'bypass', detail: 'route' });
  }

  /**
   * A POST's answer that is a fresh representation of its own target (rules/post-answer.ts) is
   * stored as a GET's, after the invalidation: the fill opens after it, so the invalidation
   * cannot poison it. True when the answer went through the storing rules (they set its
   * Cache-Status).
   */
  async #keepPostAnswer(exchange: Exchange, response: GatewayResponse): Promise<boolean> {
    if (exchange.method !== 'POST' || !exchange.cacheable || !this.#cache.config.enabled) return false;
    if (response.problem !== undefined) return false;
    const { target, path, authority, headers, principal } = exchange;
    const request = describeRequest({ method: 'GET', target, path, authority, headers, principal });
    if (!this.#cache.answersGet(request, response)) return false;
    const fill = this.#cache.openFill(request.path);
    await settleAnswer(this.#cache, request, fill, undefined, response, 'method', 'client');
    return true;
  }

  /** Resolves false when the answer is known not to be stored (the collapsed misses go on then). */
  async #forwardAndStore(
    exchange: Exchange,
    request: CacheRequest,
    revalidation: Revalidation | undefined,
    miss: 'uri-miss' | 'vary-miss' = 'uri-miss',
  ): Promise<boolean> {
    const fwd = revalidation === undefined ? miss : revalidation.reason;
    const fill = this.#cache.openFill(request.path);
    try {
      await exchange.forward(
        revalidation === undefined ? undefined : validatorsOf(revalidation.entry, request),
      );
    } catch (error) {
      fill.end();
      throw error;
    }
    const response = exchange.response;
    if (response === undefined) {
      fill.end();
      return false;
    }
    const settled = await settleAnswer(this.#cache, request, fill, revalidation, response, fwd, 'client');
    this.#settle(exchange, request, settled);
    return !('unstored' in settled);
  }

  /**
   * A miss whose answer may not be stored whatever it says (the request's no-store, 5.2.1.5):
   * forwarded without joining a fill and without reading the response's caching semantics,
   * which nothing would use.
   */
  async #forwardUnstored(exchange: Exchange, fwd: CacheStatus['fwd']): Promise<void> {
    await exchange.forward();
    const response = exchange.response;
    if (response === undefined) return;
    this.#settle(exchange, undefined, settleUnstored(response, fwd));
  }

  /** The client's answer: the stored response settled on, or the upstream's as relayed. */
  #settle(exchange: Exchange, request: CacheRequest | undefined, settled: Settled): void {
    if (settled.outcome !== undefined) this.#note(exchange, settled.outcome);
    if (settled.serve !== undefined && request !== undefined)
      exchange.response = storedAnswer(settled.serve, request, settled.status, this.#fields);
  }

  /** Counts the outcome and tells the audit record. */
  #note(exchange: Exchange, outcome: Outcome): void {
    this.#cache.record(outcome);
    exchange.fact(outcome);
  }
}

/** 5.2.1.7: only-if-cached and nothing usable stored → 504. */
function onlyIfCached(request: CacheRequest): void {
  if (request.directives.has('only-if-cached'))
    throw new HttpProblem('ERR_GATEWAY_TIMEOUT', 'only-if-cached: no stored response can be used', {
      headers: { 'Cache-Status': formatCacheStatus({ detail: 'only-if-cached' }) },
    });
}

function finish(exchange: Exchange, status: CacheStatus): void {
  const response = exchange.response;
  if (response === undefined) return;
  appendCacheStatus(response.headers, status);
}
