/**
 * The cache engine, without HTTP plumbing: stored responses by partition and target, and four
 * operations on them (as Envoy's cache filter has with its store):
 *
 * - `lookup`: what RFC 9111 section 4 lets the cache do for a request (a fresh hit, a stale one
 *   to revalidate, a miss);
 * - `insert`: whether a response may be stored (section 3), and storing it once its body is
 *   whole or its pieces cover it (3.4);
 * - `update`: what an answer to a revalidation does to the stored response (a 304's fields,
 *   4.3.4; a HEAD's, 4.3.5; anything else replaces it);
 * - `invalidate` / `purge`: dropping responses by path or path prefix, here and, over Redis, on
 *   every replica.
 *
 * Besides: fills (requests on their way upstream, which an invalidation poisons), counters and
 * the lifecycle. What to do with a response is decided once, for the client's fills and for
 * background revalidations alike (flight/answer.ts); the stage (stages/cache.ts) only adapts
 * the pipeline's context to it (cache-front.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { RedisClient, SubscriberConnection } from '../../../shared/redis.ts';
import type { CacheConfig } from '../../config/schema/cache.ts';
import { createInvalidationBus, type InvalidationBus } from '../bus/invalidation-bus.ts';
import type { CacheStats, Outcome } from './cache-stats.ts';
import type { CacheRequest, Fill, Insertion, ReceivedResponse, Selection } from './cache-types.ts';
import { lookupPartitions, storePartition } from '../rules/partition.ts';
import { postAnswersGet } from '../rules/post-answer.ts';
import { createPolicyFactory, plainlyFresh, type PolicyFactory } from '../rules/policy.ts';
import { readSemantics, type ResponseSemantics } from '../rules/response-semantics.ts';
import { storability } from '../rules/storability.ts';
import { languageSelects, varyValue } from '../rules/vary-values.ts';
import {
  createEntryStore,
  entryKey,
  primaryKey,
  type EntryStore,
  type StoredResponse,
} from '../store/entry-store.ts';
import { Fills } from '../store/fills.ts';
import {
  createPartialStore,
  type PartialStore,
  type Piece,
  type PieceOwner,
  type Prefix,
} from '../store/partial-store.ts';
import { storedHeaders, validatorView } from '../store/stored-fields.ts';
import { headMatches, updateStored } from '../store/stored-update.ts';

export type { StoredResponse } from '../store/entry-store.ts';
export type { CacheStats, Outcome } from './cache-stats.ts';
export type { Prefix } from '../store/partial-store.ts';
export type { CacheRequest, Fill, Insertion, ReceivedResponse, Selection } from './cache-types.ts';

/** What the cache needs besides its config. */
export interface HttpCacheDeps {
  /** Two connections (a subscriber cannot publish); unset: invalidations stay in this process. */
  redis?: { publisher: RedisClient; subscriber: SubscriberConnection } | undefined;
  /** Pub/sub channel, used as given: put the deployment's key prefix in it. */
  channel: string;
  log: Logger;
  /** Milliseconds since the epoch; tests advance it. */
  now?: () => number;
}

/**
 * Creates the cache of one gateway instance. With `deps.redis`, it subscribes to `deps.channel`
 * and serves nothing until subscribed; `close()` unsubscribes (the connections stay the caller's).
 */
export function createHttpCache(config: CacheConfig, deps: HttpCacheDeps): HttpCache {
  return new HttpCache(config, deps);
}

/** The cache of one gateway instance. */
export class HttpCache {
  readonly config: CacheConfig;
  readonly #now: () => number;
  readonly #policies: PolicyFactory;
  readonly #store: EntryStore;
  /** Pieces of a few representations at a time; whole ones are stored as entries. */
  readonly #partials: PartialStore;
  readonly #fills = new Fills();
  readonly #counts = { hit: 0, miss: 0, stale: 0, revalidated: 0, bypass: 0, stored: 0, invalidated: 0 };
  readonly #bus: InvalidationBus | undefined;
  readonly #log: Logger;

  constructor(config: CacheConfig, deps: HttpCacheDeps) {
    this.config = config;
    this.#now = deps.now ?? Date.now;
    this.#log = deps.log;
    this.#policies = createPolicyFactory({
      now: this.#now,
      heuristicFraction: config.heuristicFraction,
      maxHeuristicSeconds: config.maxHeuristicSeconds,
    });
    this.#store = createEntryStore(config.maxBytes, Math.floor(config.maxBytes * config.maxOwnerShare));
    this.#partials = createPartialStore(Math.min(config.maxBytes, 4 * config.maxEntryBytes));
    this.#bus =
      deps.redis === undefined
        ? undefined
        : createInvalidationBus({
            ...deps.redis,
            channel: deps.channel,
            log: deps.log,
            onMessage: (message) => {
              if (message.paths !== undefined) this.#dropPaths(message.paths);
              if (message.prefix !== undefined) this.#dropPrefix(message.prefix);
            },
            onResubscribed: () => this.#dropAll(),
          });
  }

  /** Enabled, and (with Redis) hearing the other replicas' invalidations. */
  available(): boolean {
    return this.config.enabled && (this.#bus === undefined || this.#bus.ready());
  }

  /** Resolves once the invalidation bus is subscribed (at once without Redis). */
  whenReady(timeoutMs = 5000): Promise<boolean> {
    return this.#bus?.whenReady(timeoutMs) ?? Promise.resolve(true);
  }

  /** What the cache can do for `request`: its most recent matching stored response, judged. */
  lookup(request: CacheRequest): Selection {
    let seen = false;
    for (const partition of lookupPartitions(request.caller)) {
      const variants = this.#store.variants(primaryKey(partition, request.authority, request.target));
      seen ||= variants.length > 0;
      const matching = variants.filter((entry) => varyMatches(entry, request.headers));
      // Only when no variant matches: one chosen for its language by the service (vary-values.ts).
      if (matching.length === 0)
        matching.push(...variants.filter((e) => languageMatches(e, request.headers)));
      if (matching.length === 0) continue;
      // 4.1: of several matching responses, the most recent is used.
      const entry = matching.reduce((a, b) => (b.storedAt > a.storedAt ? b : a));
      return evaluate(entry, request);
    }
    return { kind: seen ? 'vary-miss' : 'uri-miss' };
  }

  /**
   * The first bytes of what `request` asks for, held as 206 pieces with a strong validator:
   * enough to fetch only the rest (3.3: a cache MAY complete a stored incomplete response).
   */
  heldPrefix(request: CacheRequest): Prefix | undefined {
    if (!this.available()) return undefined;
    for (const partition of lookupPartitions(request.caller)) {
      const primary = primaryKey(partition, request.authority, request.target);
      const found = this.#partials.prefix(primary, (values) => valuesMatch(values, request.headers));
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** A request for `path` on its way upstream; end it once its answer is stored or not. */
  openFill(path: string): Fill {
    return this.#fills.open(path, this.#now());
  }

  /** Whether `response` to `request` may be stored (section 3), and where. */
  insert(request: CacheRequest, fill: Fill, response: ReceivedResponse): Insertion {
    if (!this.available()) return { store: false, reason: 'unavailable' };
    const semantics = this.#semantics(response.headers);
    const where = storePartition(request.caller, semantics);
    if ('reason' in where) return { store: false, reason: where.reason };
    const policy = this.#policies.create(request.view, {
      status: response.status,
      headers: response.headers,
      semantics,
      requestTime: fill.requestTime,
      responseTime: this.#now(),
    });
    const verdict = storability({
      method: request.method,
      status: response.status,
      headers: response.headers,
      semantics,
      requestNoStore: request.directives.has('no-store'),
      policy,
    });
    if (!verdict.ok) return { store: false, reason: verdict.reason };
    const length = Number(response.headers['content-length']);
    if (Number.isFinite(length) && length > this.config.maxEntryBytes)
      return { store: false, reason: 'too-large' };
    const primary = primaryKey(where.partition, request.authority, request.target);
    const varyValues = new Map(
      semantics.vary.map((name) => [name, varyValue(request.headers, name)] as const),
    );
    const headers = storedHeaders(response.headers, semantics.omittedFields);
    const key = entryKey(primary, varyValues);
    const build = (body: Buffer): StoredResponse => ({
      key,
      primary,
      path: request.path,
      owner: where.owner,
      status: response.status,
      headers,
      body,
      policy,
      semantics,
      varyValues,
      storedAt: this.#now(),
    });
    return {
      store: true,
      partition: where.partition,
      key,
      commit: (body) => this.#put(fill, build(body)),
      addPiece: (piece) =>
        this.#addPiece(fill, key, { path: request.path, primary, varyValues }, piece, build),
    };
  }

  /** Whether the answer to a POST of `request`'s target may be stored for GET (rules/post-answer.ts). */
  answersGet(request: CacheRequest, response: ReceivedResponse): boolean {
    return postAnswersGet(request.target, request.authority, response, this.#semantics(response.headers));
  }

  /**
   * What an answer to a revalidation of `entry` does to it: a 304 updates it (3.2), unless its
   * validator selects no stored response (4.3.4); a 200 to a HEAD updates it when the
   * validators agree (4.3.5); a server error leaves it; anything else replaces it (dropped
   * here; the answer itself may then be inserted). The updated entry, or undefined once dropped.
   */
  update(
    entry: StoredResponse,
    request: CacheRequest,
    fill: Fill,
    response: ReceivedResponse,
  ): StoredResponse | undefined {
    if (response.status === 304) {
      const check = entry.policy.revalidatedPolicy(request.view, {
        status: 304,
        headers: validatorView(response.headers),
      });
      return check.matches ? this.#refresh(entry, request, fill, response.headers) : this.#remove(entry);
    }
    if (request.method === 'HEAD' && response.status === 200)
      return headMatches(entry, response.headers)
        ? this.#refresh(entry, request, fill, response.headers)
        : this.#remove(entry);
    return response.status >= 500 ? entry : this.#remove(entry);
  }

  /** Drops every stored response for these paths (any query, any partition), here and on every replica. */
  async invalidate(paths: readonly string[]): Promise<number> {
    const dropped = this.#dropPaths(paths);
    if (this.#bus !== undefined && paths.length > 0) await this.#bus.publish({ paths: [...new Set(paths)] });
    return dropped;
  }

  /** Drops every stored response whose path starts with `prefix`, here and on every replica. */
  purge(prefix: string): number {
    const dropped = this.#dropPrefix(prefix);
    if (this.#bus !== undefined) void this.#bus.publish({ prefix });
    return dropped;
  }

  /** Counts what was done with a request. */
  record(outcome: Outcome): void {
    this.#counts[outcome]++;
  }

  stats(): CacheStats {
    const counts = this.#counts;
    return {
      hits: counts.hit,
      misses: counts.miss,
      stale: counts.stale,
      revalidated: counts.revalidated,
      bypassed: counts.bypass,
      stored: counts.stored,
      invalidated: counts.invalidated,
      bytes: this.#store.bytes,
      entries: this.#store.size,
    };
  }

  async close(): Promise<void> {
    await this.#bus?.close();
    this.#partials.clear();
    this.#store.clear();
  }

  /** The caching directives of a response, as this cache reads them (targeted fields first). */
  #semantics(headers: Record<string, string | string[] | undefined>): ResponseSemantics {
    return readSemantics(headers, this.config.targetedFields);
  }

  /** Stores unless the fill was invalidated meanwhile; true when stored. */
  #put(fill: Fill, entry: StoredResponse): boolean {
    if (fill.poisoned || !this.available()) return false;
    const stored = this.#store.set(entry);
    if (stored) this.#counts.stored++;
    return stored;
  }

  #addPiece(
    fill: Fill,
    key: string,
    owner: PieceOwner,
    piece: Piece,
    build: (body: Buffer) => StoredResponse,
  ): boolean {
    if (fill.poisoned || !this.available()) return false;
    const whole = this.#partials.add(key, owner, piece);
    return whole !== undefined && this.#put(fill, build(whole));
  }

  /** The entry updated from a 304's or a HEAD response's fields, stored again if it still may be. */
  #refresh(
    entry: StoredResponse,
    request: CacheRequest,
    fill: Fill,
    incoming: Record<string, string | string[]>,
  ): StoredResponse {
    const result = updateStored(entry, request.view, fill.requestTime, incoming, {
      policies: this.#policies,
      now: this.#now,
      targetedFields: this.config.targetedFields,
    });
    if (result.storable && !fill.poisoned && this.available()) this.#store.set(result.entry);
    else this.#store.delete(entry);
    return result.entry;
  }

  #remove(entry: StoredResponse): undefined {
    this.#store.delete(entry);
    return undefined;
  }

  #dropPaths(paths: readonly string[]): number {
    let dropped = 0;
    for (const path of new Set(paths)) {
      dropped += this.#store.deletePath(path);
      this.#partials.deletePath(path);
      this.#fills.poison((p) => p === path);
    }
    this.#counts.invalidated += dropped;
    return dropped;
  }

  #dropPrefix(prefix: string): number {
    this.#fills.poison((p) => p.startsWith(prefix));
    const dropped = this.#store.deletePathPrefix(prefix);
    this.#partials.deletePathPrefix(prefix);
    this.#counts.invalidated += dropped;
    return dropped;
  }

  /** The bus was away: any invalidation may have been missed, so nothing stored is trusted. */
  #dropAll(): void {
    this.#fills.poison(() => true);
    this.#partials.clear();
    const dropped = this.#store.clear();
    this.#log.warn({ dropped }, 'cache invalidation bus back: stored responses dropped');
  }
}

function varyMatches(entry: StoredResponse, headers: IncomingHttpHeaders): boolean {
  return valuesMatch(entry.varyValues, headers);
}

function valuesMatch(values: ReadonlyMap<string, string | undefined>, headers: IncomingHttpHeaders): boolean {
  for (const [name, value] of values) if (varyValue(headers, name) !== value) return false;
  return true;
}

/**
 * Every Vary field but Accept-Language matches, and the request's one preferred language is the
 * stored response's Content-Language (4.1, "by standard semantics of the header field").
 */
function languageMatches(entry: StoredResponse, headers: IncomingHttpHeaders): boolean {
  if (!entry.varyValues.has('accept-language')) return false;
  for (const [name, value] of entry.varyValues)
    if (name !== 'accept-language' && varyValue(headers, name) !== value) return false;
  return languageSelects(headers['accept-language'], entry.headers['content-language']);
}

function evaluate(entry: StoredResponse, request: CacheRequest): Selection {
  const { policy, semantics } = entry;
  if (plainlyFresh(policy, request.directives)) return { kind: 'fresh', entry };
  const result = policy.evaluateRequest(request.view);
  const stale = policy.stale();
  if (result.response !== undefined && (!stale || !semantics.neverStale)) {
    if (result.revalidation === undefined) return { kind: 'fresh', entry };
    if (!result.revalidation.synchronous) return { kind: 'stale-while-revalidate', entry };
  }
  return { kind: 'revalidate', entry, reason: stale ? 'stale' : 'request' };
}
