/**
 * The one answer handler: what the cache does with what came back from the upstream, for a
 * client's request (a miss, a revalidation) and for a background revalidation alike. A 304
 * updates the stored response (RFC 9111 section 4.3.4) and the client is answered from it; a
 * server error or an unreachable origin may leave a stale one to serve (4.2.4, RFC 5861
 * section 4); any other answer replaces the stored one and is stored itself when section 3
 * allows. Only who reads the body differs: the client's answer is copied as it streams to the
 * client; a side call's is read here, since nobody else will.
 */
import type { Readable } from 'node:stream';
import type { GatewayResponse } from '../../pipeline/context.ts';
import { appendCacheStatus, formatCacheStatus, type CacheStatus } from '../answer/cache-status.ts';
import type { CacheRequest, Fill, Insertion } from '../engine/cache-types.ts';
import type { HttpCache } from '../engine/http-cache.ts';
import type { StoredResponse } from '../store/entry-store.ts';
import { ownCopy, readBody, teeBody } from './body-tee.ts';

/** A stored response being revalidated, and why. */
export interface Revalidation {
  entry: StoredResponse;
  /** `stale`: past its freshness; `request`: the client asked for validation. */
  reason: 'stale' | 'request';
}

/** Who reads the answer: the client it is relayed to, or nobody (a side call). */
export type Reader = 'client' | 'side';

/** What the client gets: a stored response (with its Cache-Status), or the answer as relayed. */
export type Settled =
  | { serve: StoredResponse; status: CacheStatus; outcome: 'revalidated' | 'stale' }
  | { serve?: undefined; outcome: 'miss' | undefined; unstored?: true };

/**
 * Settles `response`, the upstream's answer to `request` sent with `fill` open (the fill is
 * ended here, or by the body copy once it ends). `fwd` says why it went upstream.
 */
export async function settleAnswer(
  cache: HttpCache,
  request: CacheRequest,
  fill: Fill,
  revalidation: Revalidation | undefined,
  response: GatewayResponse,
  fwd: CacheStatus['fwd'],
  reader: Reader,
): Promise<Settled> {
  if (response.problem !== undefined) {
    fill.end();
    return originError(revalidation, response, fwd);
  }
  if (revalidation !== undefined) {
    const { entry } = revalidation;
    if (response.status === 304) {
      response.body?.resume();
      fill.end();
      const updated = cache.update(entry, request, fill, response);
      // A 304 that selects no stored response (4.3.4) still says the origin has nothing newer
      // than what we sent it; like http-cache-semantics, the old body is the only one to serve.
      const detail = updated === undefined ? { detail: 'validator-mismatch' } : {};
      return { serve: updated ?? entry, status: { fwd, fwdStatus: 304, ...detail }, outcome: 'revalidated' };
    }
    const keepStale = revalidation.reason === 'stale' && staleIfError(entry);
    // A side call never replaces a stored response with a server error: nobody asked for it,
    // and the next request revalidates again.
    if (response.status >= 500 && (keepStale || reader === 'side')) {
      discard(response.body);
      fill.end();
      return {
        serve: entry,
        status: { fwd: 'stale', fwdStatus: response.status, detail: 'stale-if-error' },
        outcome: 'stale',
      };
    }
    cache.update(entry, request, fill, response);
  }
  const insertion = cache.insert(request, fill, response);
  const status: CacheStatus = { fwd, fwdStatus: response.status };
  if (!insertion.store) {
    fill.end();
    if (reader === 'side') discard(response.body);
    appendCacheStatus(response.headers, { ...status, detail: insertion.reason });
    return { outcome: 'miss', unstored: true };
  }
  const stored =
    reader === 'side'
      ? await readAndStore(cache, fill, insertion, response)
      : keep(cache, fill, insertion, response);
  appendCacheStatus(response.headers, { ...status, stored });
  return { outcome: 'miss' };
}

/**
 * A miss whose answer may not be stored whatever it says (the request's no-store, 5.2.1.5):
 * the client sees the same Cache-Status as when the store was refused.
 */
export function settleUnstored(response: GatewayResponse, fwd: CacheStatus['fwd']): Settled {
  if (response.problem !== undefined) return originError(undefined, response, fwd);
  appendCacheStatus(response.headers, { fwd, fwdStatus: response.status, detail: 'request-no-store' });
  return { outcome: 'miss' };
}

/**
 * The origin could not be reached (the proxy's 502 or 504, or a refusal after this stage):
 * RFC 9111 section 4.2.4 lets a disconnected cache serve stale unless must-revalidate,
 * proxy-revalidate, no-cache or s-maxage forbid it; stale-if-error (RFC 5861 section 4) says
 * so explicitly. Not when the client itself asked for validation (no-cache, max-age=0): it
 * gets the error.
 */
function originError(
  revalidation: Revalidation | undefined,
  response: GatewayResponse,
  fwd: CacheStatus['fwd'],
): Settled {
  if (
    revalidation?.reason === 'stale' &&
    response.status >= 500 &&
    !revalidation.entry.semantics.neverStale
  ) {
    const entry = revalidation.entry;
    return {
      serve: entry,
      status: { fwd: 'stale', detail: staleIfError(entry) ? 'stale-if-error' : 'origin-unreachable' },
      outcome: 'stale',
    };
  }
  response.headers['cache-status'] = formatCacheStatus({ fwd, detail: 'origin-error' });
  return { outcome: undefined };
}

/**
 * Keeps a copy of the client's answer. True only of an answer already in the store when its
 * head goes out: one whole in memory (forward.ts) and taken by the store. A streamed body is
 * stored only once it has ended whole, after its head is gone: an upstream cut, a client gone
 * or the entry limit may still leave it unstored, so its head does not claim it (RFC 9211
 * `stored` states a fact).
 */
function keep(
  cache: HttpCache,
  fill: Fill,
  insertion: Insertion & { store: true },
  response: GatewayResponse,
): boolean {
  const buffered = response.bufferedBody;
  let stored = false;
  if (buffered !== undefined) {
    if (buffered.length <= cache.config.maxEntryBytes)
      stored = insertion.commit(ownCopy([buffered], buffered.length));
    fill.end();
  } else if (response.body === null) {
    stored = insertion.commit(Buffer.alloc(0));
    fill.end();
  } else {
    response.body = teeBody(
      response.body,
      cache.config.maxEntryBytes,
      (body) => insertion.commit(body),
      () => fill.end(),
    );
  }
  return stored;
}

/** A side call's answer, read whole here (nobody else reads it) and stored. */
async function readAndStore(
  cache: HttpCache,
  fill: Fill,
  insertion: Insertion & { store: true },
  response: GatewayResponse,
): Promise<boolean> {
  try {
    const body = await readBody(response.body, cache.config.maxEntryBytes);
    return body !== undefined && insertion.commit(body);
  } finally {
    fill.end();
  }
}

/** Whether `entry` may still be served stale after an error (RFC 5861 section 4). */
export function staleIfError(entry: StoredResponse): boolean {
  const { policy, semantics } = entry;
  return !semantics.neverStale && policy.maxAge() + semantics.staleIfError > policy.age();
}

/** Drops an upstream body nobody will read; its abort error has no one to reach. */
export function discard(body: Readable | null): void {
  if (body === null) return;
  body.on('error', () => {});
  body.destroy();
}
