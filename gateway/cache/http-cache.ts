/**
 * The cache itself, without HTTP plumbing: stored responses by partition and target, the
 * RFC 9111 reuse decision for a request, storing with the section 3 rules, invalidation
 * (local, and across replicas over Redis), purge and statistics. The pipeline stage
 * (stages/cache.ts) drives it.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { RedisClient, SubscriberConnection } from '../../shared/redis.ts';
import type { Logger } from 'pino';
import type { Principal } from '../../shared/principal.ts';
import type { CacheStats, Outcome } from './cache-stats.ts';
import type { CacheRequest, Fill, ReceivedResponse, Selection, StoreDecision } from './cache-types.ts';
import type { CacheConfig } from '../config/schema/cache.ts';
import { parseCacheControl, type Directives } from './rules/directives.ts';
import {
  createEntryStore,
  entryKey,
  primaryKey,
  type EntryStore,
  type StoredResponse,
} from './store/entry-store.ts';
import { createInvalidationBus, type InvalidationBus } from './bus/invalidation-bus.ts';
import { createPartialStore, type Piece } from './store/partial-store.ts';
import { callerOf, lookupPartitions, storePartition, type Caller } from './rules/partition.ts';
import { createPolicyFactory, requestView, type PolicyFactory, type PolicyRequest } from './rules/policy.ts';
import { readSemantics, type ResponseSemantics } from './rules/response-semantics.ts';
import { storability } from './rules/storability.ts';
import { storedHeaders, validatorView, varyValue } from './store/stored-fields.ts';
import { headMatches, updateStored } from './store/stored-update.ts';

export type { StoredResponse } from './store/entry-store.ts';
export type { CacheStats, Outcome } from './cache-stats.ts';
export type { CacheRequest, Fill, ReceivedResponse, Selection, StoreDecision } from './cache-types.ts';

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

/** The cache of one gateway instance. */
export interface HttpCache {
  readonly config: CacheConfig;
  now(): number;
  /** Enabled, and (with Redis) hearing the other replicas' invalidations. */
  available(): boolean;
  /** Resolves once the invalidation bus is subscribed (at once without Redis). */
  whenReady(timeoutMs?: number): Promise<boolean>;
  describe(
    method: string,
    target: string,
    path: string,
    headers: IncomingHttpHeaders,
    principal?: Principal,
  ): CacheRequest;
  select(request: CacheRequest): Selection;
  beginFill(path: string): Fill;
  decide(request: CacheRequest, fill: Fill, response: ReceivedResponse): StoreDecision;
  /**
   * A 206 for a response that may be stored (RFC 9111 section 3.4): kept until the pieces with
   * the same strong validator cover the representation, then stored whole as a 200 built by
   * `decision`; true once stored.
   */
  addPiece(fill: Fill, decision: StoreDecision & { store: true }, piece: Piece): boolean;
  /** Stores unless the fill was invalidated meanwhile; true when stored. */
  commit(fill: Fill, entry: StoredResponse): boolean;
  /** A 304 for a stored response: the updated entry (3.2), stored again unless invalidated. */
  freshen(
    entry: StoredResponse,
    request: CacheRequest,
    fill: Fill,
    response: ReceivedResponse,
  ): StoredResponse | undefined;
  /**
   * A 200 to a HEAD request for a stored GET response (4.3.5): the updated entry when the
   * validators agree, else the stored response is dropped and `undefined` comes back.
   */
  updateFromHead(
    entry: StoredResponse,
    request: CacheRequest,
    fill: Fill,
    response: ReceivedResponse,
  ): StoredResponse | undefined;
  /** The caching directives of a response, as this cache reads them (targeted fields first). */
  semantics(headers: Record<string, string | string[] | undefined>): ResponseSemantics;
  remove(entry: StoredResponse): void;
  /** Drops every stored response for these paths (any query, any partition), here and on every replica. */
  invalidate(paths: readonly string[]): Promise<number>;
  /** Drops every stored response whose path starts with `prefix`, here and on every replica. */
  purge(prefix: string): number;
  record(outcome: Outcome): void;
  stats(): CacheStats;
  close(): Promise<void>;
}

/**
 * Creates the cache of one gateway instance. With `deps.redis`, it subscribes to `deps.channel`
 * and serves nothing until subscribed; `close()` unsubscribes (the connections stay the caller's).
 */
export function createHttpCache(config: CacheConfig, deps: HttpCacheDeps): HttpCache {
  const now = deps.now ?? Date.now;
  const policies: PolicyFactory = createPolicyFactory({
    now,
    heuristicFraction: config.heuristicFraction,
    maxHeuristicSeconds: config.maxHeuristicSeconds,
  });
  const store: EntryStore = createEntryStore(
    config.maxBytes,
    Math.floor(config.maxBytes * config.maxOwnerShare),
  );
  const fills = new Map<string, Set<Fill>>();
  // Pieces of a few representations at a time; whole ones are stored as entries.
  const partials = createPartialStore(Math.min(config.maxBytes, 4 * config.maxEntryBytes));
  const counts = { hit: 0, miss: 0, stale: 0, revalidated: 0, bypass: 0, stored: 0, invalidated: 0 };

  const poison = (match: (path: string) => boolean) => {
    for (const [path, set] of fills) if (match(path)) for (const fill of set) fill.poisoned = true;
  };
  const dropPaths = (paths: readonly string[]) => {
    let dropped = 0;
    for (const path of new Set(paths)) {
      dropped += store.deletePath(path);
      partials.deletePath(path);
      poison((p) => p === path);
    }
    counts.invalidated += dropped;
    return dropped;
  };
  const dropPrefix = (prefix: string) => {
    poison((p) => p.startsWith(prefix));
    const dropped = store.deletePathPrefix(prefix);
    partials.deletePathPrefix(prefix);
    counts.invalidated += dropped;
    return dropped;
  };

  const bus: InvalidationBus | undefined =
    deps.redis === undefined
      ? undefined
      : createInvalidationBus({
          ...deps.redis,
          channel: deps.channel,
          log: deps.log,
          onMessage(message) {
            if (message.paths !== undefined) dropPaths(message.paths);
            if (message.prefix !== undefined) dropPrefix(message.prefix);
          },
          onResubscribed() {
            poison(() => true);
            partials.clear();
            const dropped = store.clear();
            deps.log.warn({ dropped }, 'cache invalidation bus back: stored responses dropped');
          },
        });

  const available = () => config.enabled && (bus === undefined || bus.ready());

  function commit(fill: Fill, entry: StoredResponse): boolean {
    if (fill.poisoned || !available()) return false;
    const stored = store.set(entry);
    if (stored) counts.stored++;
    return stored;
  }

  /** The entry updated from a 304's or a HEAD response's fields, stored again if it still may be. */
  function update(
    entry: StoredResponse,
    request: CacheRequest,
    fill: Fill,
    incoming: Record<string, string | string[]>,
  ): StoredResponse {
    const result = updateStored(entry, request.view, fill.requestTime, incoming, {
      policies,
      now,
      targetedFields: config.targetedFields,
    });
    if (result.storable && !fill.poisoned && available()) store.set(result.entry);
    else store.delete(entry);
    return result.entry;
  }

  function varyMatches(entry: StoredResponse, headers: IncomingHttpHeaders): boolean {
    for (const [name, value] of entry.varyValues) if (varyValue(headers, name) !== value) return false;
    return true;
  }

  function evaluate(entry: StoredResponse, request: CacheRequest): Selection {
    const { policy, semantics } = entry;
    const result = policy.evaluateRequest(request.view);
    const stale = policy.stale();
    if (result.response !== undefined && (!stale || !semantics.neverStale)) {
      if (result.revalidation === undefined) return { kind: 'fresh', entry };
      if (!result.revalidation.synchronous) return { kind: 'stale-while-revalidate', entry };
    }
    return { kind: 'revalidate', entry, reason: stale ? 'stale' : 'request' };
  }

  return {
    config,
    now,
    available,
    whenReady: (timeoutMs = 5000) => bus?.whenReady(timeoutMs) ?? Promise.resolve(true),

    describe(method, target, path, incoming, principal) {
      // The headers as given, not a copy: the client's are never written (a revalidation sets
      // its conditionals in ctx.upstream.headers), and must still be answered after it.
      return new DescribedRequest(method, target, path, incoming, callerOf(principal, incoming));
    },

    select(request) {
      let seen = false;
      for (const partition of lookupPartitions(request.caller)) {
        const variants = store.variants(primaryKey(partition, request.target));
        seen ||= variants.length > 0;
        const matching = variants.filter((entry) => varyMatches(entry, request.headers));
        if (matching.length === 0) continue;
        // 4.1: of several matching responses, the most recent is used.
        const entry = matching.reduce((a, b) => (b.storedAt > a.storedAt ? b : a));
        return evaluate(entry, request);
      }
      return { kind: seen ? 'vary-miss' : 'uri-miss' };
    },

    beginFill(path) {
      const fill: Fill = {
        path,
        requestTime: now(),
        poisoned: false,
        end() {
          const set = fills.get(path);
          set?.delete(fill);
          if (set?.size === 0) fills.delete(path);
        },
      };
      let set = fills.get(path);
      if (set === undefined) fills.set(path, (set = new Set()));
      set.add(fill);
      return fill;
    },

    decide(request, fill, response) {
      if (!available()) return { store: false, reason: 'unavailable' };
      const where = storePartition(request.caller, response.semantics);
      if ('reason' in where) return { store: false, reason: where.reason };
      const policy = policies.create(request.view, {
        status: response.status,
        headers: response.headers,
        semantics: response.semantics,
        requestTime: fill.requestTime,
        responseTime: now(),
      });
      const verdict = storability({
        method: request.method,
        status: response.status,
        headers: response.headers,
        semantics: response.semantics,
        requestNoStore: request.directives.has('no-store'),
        policy,
      });
      if (!verdict.ok) return { store: false, reason: verdict.reason };
      const length = Number(response.headers['content-length']);
      if (Number.isFinite(length) && length > config.maxEntryBytes)
        return { store: false, reason: 'too-large' };
      const primary = primaryKey(where.partition, request.target);
      const varyValues = new Map(
        response.semantics.vary.map((name) => [name, varyValue(request.headers, name)] as const),
      );
      const headers = storedHeaders(response.headers, response.semantics.omittedFields);
      const key = entryKey(primary, varyValues);
      return {
        store: true,
        partition: where.partition,
        key,
        build: (body) => ({
          key,
          primary,
          path: request.path,
          owner: where.owner,
          status: response.status,
          headers,
          body,
          policy,
          semantics: response.semantics,
          varyValues,
          storedAt: now(),
        }),
      };
    },

    commit,

    addPiece(fill, decision, piece) {
      if (fill.poisoned || !available()) return false;
      const whole = partials.add(decision.key, fill.path, piece);
      return whole !== undefined && commit(fill, decision.build(whole));
    },

    freshen(entry, request, fill, response) {
      const check = entry.policy.revalidatedPolicy(request.view, {
        status: 304,
        headers: validatorView(response.headers),
      });
      // 4.3.4: a 304 whose validator selects no stored response updates nothing.
      if (!check.matches) {
        store.delete(entry);
        return undefined;
      }
      return update(entry, request, fill, response.headers);
    },

    updateFromHead(entry, request, fill, response) {
      if (!headMatches(entry, response.headers)) {
        store.delete(entry);
        return undefined;
      }
      return update(entry, request, fill, response.headers);
    },

    semantics: (headers) => readSemantics(headers, config.targetedFields),

    remove(entry) {
      store.delete(entry);
    },

    async invalidate(paths) {
      const dropped = dropPaths(paths);
      if (bus !== undefined && paths.length > 0) await bus.publish({ paths: [...new Set(paths)] });
      return dropped;
    },

    purge(prefix) {
      const dropped = dropPrefix(prefix);
      if (bus !== undefined) void bus.publish({ prefix });
      return dropped;
    },

    record(outcome) {
      counts[outcome]++;
    },

    stats() {
      return {
        hits: counts.hit,
        misses: counts.miss,
        stale: counts.stale,
        revalidated: counts.revalidated,
        bypassed: counts.bypass,
        stored: counts.stored,
        invalidated: counts.invalidated,
        bytes: store.bytes,
        entries: store.size,
      };
    },

    async close() {
      await bus?.close();
      partials.clear();
      store.clear();
    },
  };
}

/**
 * A request as the cache reads it. Its view for http-cache-semantics is made on first use: it
 * copies and rewrites every header, and a miss that is not stored (a request with no-store, an
 * answer that may not be stored) never reads it.
 */
class DescribedRequest implements CacheRequest {
  readonly method: string;
  readonly target: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly caller: Caller;
  readonly directives: Directives;
  #view: PolicyRequest | undefined = undefined;

  constructor(method: string, target: string, path: string, headers: IncomingHttpHeaders, caller: Caller) {
    this.method = method;
    this.target = target;
    this.path = path;
    this.headers = headers;
    this.caller = caller;
    this.directives = parseCacheControl(headers['cache-control']);
  }

  get view(): PolicyRequest {
    this.#view ??= requestView(this.target, this.headers);
    return this.#view;
  }
}
