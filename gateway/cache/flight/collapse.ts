/**
 * Collapsed misses: while a miss for a resource is on its way upstream, other misses for the
 * same key wait for it instead of going upstream too (20 concurrent cold GETs, one upstream
 * request). A waiter then asks the cache again, with its own request: it is served only what
 * the first answer stored where it may see it (its partition or the shared one, matching its
 * Vary fields, fresh for its directives). Anything else (not storable, private to another
 * caller, a Vary mismatch, a failure) sends it upstream itself, at once: one round of
 * waiting at most, and never longer than `maxWaitMs`.
 *
 * Keys are per partition: a caller waits only for its own partition's requests (its customer
 * and scopes, or anonymous callers together), never for another customer's. Callers with
 * credentials but no principal are never collapsed. The key also holds the negotiated
 * Accept-Encoding, the one Vary field known before the answer.
 *
 * A fetch counts as in flight until its answer is stored or known not to be: a streamed body
 * is stored when it ends, so the flight lasts until then; one refused at its head (an event
 * stream, no-store) lands at once, so that its waiters need not wait for its end.
 *
 * A key whose answer served no waiter is not collapsed again for a while (Varnish's
 * hit-for-miss): otherwise every burst for a resource that is never stored (no-store) would
 * make all but one request wait a whole upstream round trip before going upstream anyway.
 */
import type { Readable } from 'node:stream';
import { LRUCache } from 'lru-cache';
import { ClientGoneError } from '../../pipeline/context.ts';
import type { Exchange } from './exchange.ts';
import { DEFAULT_COLLAPSE } from '../../config/schema/cache.ts';
import type { CacheRequest, HttpCache, StoredResponse } from '../engine/http-cache.ts';
import { SHARED_PARTITION } from '../rules/partition.ts';

/** How long a key whose answer served no waiter goes upstream without waiting. */
const PASS_MS = 30_000;
/** Keys remembered so; past it the least recently marked are forgotten (they only wait once more). */
const MAX_PASSES = 10_000;

/**
 * Runs `fetch` for a miss, or waits for the same miss in flight: resolves with a stored
 * response to serve (a waiter's luck), or undefined once `fetch` has run (`exchange.response` set).
 * `fetch` resolves false when its answer is known not to be stored.
 */
export type CollapseMiss = (
  exchange: Exchange,
  request: CacheRequest,
  fetch: () => Promise<boolean>,
) => Promise<StoredResponse | undefined>;

export function createCollapseMiss(cache: HttpCache): CollapseMiss {
  const config = cache.config.collapse ?? DEFAULT_COLLAPSE;
  const flights = new Map<string, Promise<void>>();
  const passes = new LRUCache<string, true>({ max: MAX_PASSES, ttl: PASS_MS, ttlAutopurge: false });

  async function lead(key: string, exchange: Exchange, fetch: () => Promise<boolean>): Promise<undefined> {
    let land!: () => void;
    flights.set(key, new Promise<void>((resolve) => (land = resolve)));
    let landed = false;
    const done = () => {
      if (landed) return;
      landed = true;
      flights.delete(key);
      land();
    };
    let mayStore: boolean;
    try {
      mayStore = await fetch();
    } catch (error) {
      done();
      throw error;
    }
    if (mayStore) whenSettled(exchange, done);
    else done();
    return undefined;
  }

  return async function collapseMiss(exchange, request, fetch) {
    const key = config.enabled ? collapseKey(exchange, request) : undefined;
    if (key === undefined) return fetch().then(() => undefined);
    const flight = flights.get(key);
    if (flight === undefined)
      return passes.has(key) ? fetch().then(() => undefined) : lead(key, exchange, fetch);
    const landed = await waitFor(flight, config.maxWaitMs, exchange);
    if (landed) {
      const selection = cache.lookup(request);
      if (selection.kind === 'fresh') return selection.entry;
      passes.set(key, true);
    }
    await fetch();
    return undefined;
  };
}

/** Undefined for requests never collapsed: not a plain GET, no-store, or no partition of their own. */
function collapseKey(exchange: Exchange, request: CacheRequest): string | undefined {
  if (request.method !== 'GET' || request.directives.has('no-store') || exchange.hasBody) return undefined;
  const { caller } = request;
  const partition = caller.own ?? (caller.authenticated ? undefined : SHARED_PARTITION);
  if (partition === undefined) return undefined;
  return `${partition}\n${request.authority}\n${request.target}\n${request.headers['accept-encoding'] ?? ''}`;
}

/** Calls `done` once the leader's answer is stored or known not to be. */
function whenSettled(exchange: Exchange, done: () => void): void {
  const response = exchange.response;
  const body: Readable | null | undefined =
    response === undefined || response.bufferedBody !== undefined ? null : response.body;
  if (body === null || body === undefined || body.readableEnded || body.destroyed) {
    done();
    return;
  }
  // The cache's copy is committed as the body ends (body-tee.ts), before 'close'; the
  // client's response closing covers a body that is never read (the client left first).
  body.once('close', done);
  exchange.onClosed(done);
}

/** True when the flight landed within the bound; throws when the client left meanwhile. */
async function waitFor(flight: Promise<void>, maxWaitMs: number, exchange: Exchange): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  let onGone: (() => void) | undefined;
  const outcome = await Promise.race([
    flight.then(() => 'landed' as const),
    new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), maxWaitMs))),
    new Promise<'gone'>((resolve) => {
      onGone = () => resolve('gone');
      exchange.signal.once('abort', onGone);
    }),
  ]);
  clearTimeout(timer);
  if (onGone !== undefined) exchange.signal.off('abort', onGone);
  if (outcome === 'gone' || exchange.signal.gone) throw new ClientGoneError();
  return outcome === 'landed';
}
