/**
 * The RFC 9111 rules, from http-cache-semantics (4.3.0), fed with inputs it reads correctly.
 *
 * The library is right about most rules (storability, freshness lifetime with s-maxage,
 * Expires and heuristics, request directives, stale-while-revalidate windows, revalidation
 * headers and the 304 matching of section 4.3.4) but parses naively and has a few gaps.
 * Rather than patch its internals, we give it a normalized view of each message:
 *
 * - Cache-Control re-serialized from our parser: case-insensitive names, quoted values,
 *   first occurrence of a duplicate, invalid max-age/s-maxage as 0 ("invalid freshness
 *   information ... stale", 4.2.1); the targeted field replaces it (RFC 9213).
 * - must-revalidate and proxy-revalidate left out: 4.3.0 refuses every reuse when it sees
 *   them, even while fresh; we enforce them where they apply, once stale (5.2.2.2, 5.2.2.8).
 * - Expires, Date and Last-Modified read as strict HTTP-dates; an invalid Expires becomes a
 *   past date (5.3).
 * - Age replaced by the corrected initial age of section 4.2.3 (the library ignores the
 *   apparent age from Date and the response delay), so its age() is current_age.
 * - Final status codes it does not know are presented as 200 once our own section 3 check
 *   has allowed them (explicit freshness or public); it would otherwise never store a 500
 *   with max-age, which section 3 permits.
 * - Pragma left out, in requests and responses: RFC 9111 section 5.4 deprecates it (and never
 *   gave it a meaning in responses); the library still reads it.
 * - A clock of our own (tests advance time) and a cap on heuristic freshness.
 */
import CachePolicy from 'http-cache-semantics';
import type { IncomingHttpHeaders } from 'node:http';
import { deltaSeconds, firstValue, joinField, parseCacheControl, type Directives } from './directives.ts';
import { formatHttpDate, parseHttpDate } from '../../foundation/http-date.ts';
import type { Headers, ResponseSemantics } from './response-semantics.ts';

/** An http-cache-semantics policy running on our clock. */
export type Policy = CachePolicy;
/** A request view as the library reads it (see requestView). */
export type PolicyRequest = CachePolicy.HttpRequest & { headers: Record<string, string> };

/** The host every view carries: entries are keyed by target already, and one gateway is one origin. */
const VIEW_HOST = 'portico-cache';
/** Status codes 4.3.0 understands; others pass as 200 once our section 3 check allowed them. */
export const LIBRARY_STATUSES = new Set([
  200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 501,
]);

/** Clock and heuristic settings shared by every policy of one cache. */
export interface PolicyOptions {
  now: () => number;
  heuristicFraction: number;
  maxHeuristicSeconds: number;
}

/** A response and its timing, as a policy is built from it. */
export interface ResponseFacts {
  status: number;
  headers: Headers;
  semantics: ResponseSemantics;
  /** When the request went upstream and when the response headers arrived (4.2.3). */
  requestTime: number;
  responseTime: number;
}

/** Builds policies from normalized views. */
export interface PolicyFactory {
  create(request: PolicyRequest, response: ResponseFacts): Policy;
}

/** A factory whose policies use `options.now` and cap heuristic freshness. */
export function createPolicyFactory(options: PolicyOptions): PolicyFactory {
  class ClockedPolicy extends CachePolicy {
    explicitFreshness = true;
    now(): number {
      return options.now();
    }
    override maxAge(): number {
      const lifetime = super.maxAge();
      return this.explicitFreshness ? lifetime : Math.min(lifetime, options.maxHeuristicSeconds);
    }
  }
  return {
    create(request, response) {
      const view = responseView(response, options.now());
      const policy = new ClockedPolicy(request, view.response, {
        shared: true,
        cacheHeuristic: options.heuristicFraction,
      });
      policy.explicitFreshness = view.explicit;
      return policy;
    },
  };
}

/** The request directives the library weighs when a stored response is asked for. */
const FRESHNESS_DIRECTIVES = ['no-cache', 'max-age', 'min-fresh', 'max-stale'] as const;

/**
 * Whether `policy` answers a request with `directives` as a plain fresh hit, told without the
 * library's evaluateRequest, which per call copies the request's fields into a view and the
 * response's into a result and formats a date. Exactly its verdict for such a request: every
 * view (requestView, responseView) has the one host, method GET, no Vary (the store matches
 * variants) and no must-revalidate (kept out), so with none of these directives it answers
 * "use it, nothing to revalidate" precisely when the response is not stale. Any of them, and
 * the caller asks the library.
 */
export function plainlyFresh(policy: Policy, directives: Directives): boolean {
  for (const name of FRESHNESS_DIRECTIVES) if (directives.has(name)) return false;
  return !policy.stale();
}

/**
 * A request as the library should see it: method GET (HEAD is answered from a stored GET),
 * normalized request directives, and no Authorization, whose rule (3.5) is applied by the
 * partitioning of entries; Vary on it is matched by the store with the real value.
 */
export function requestView(target: string, headers: IncomingHttpHeaders): PolicyRequest {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name === 'authorization' || name === 'cache-control' || name === 'pragma')
      continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const directives = parseCacheControl(headers['cache-control']);
  const parts: string[] = [];
  for (const [name, value] of directives) {
    if (name === 'max-age') parts.push(`max-age=${deltaSeconds(value) ?? 0}`);
    else if (name === 'min-fresh' && deltaSeconds(value) !== undefined)
      parts.push(`min-fresh=${deltaSeconds(value)}`);
    else if (name === 'max-stale' && value === true) parts.push('max-stale');
    else if (name === 'max-stale' && deltaSeconds(value) !== undefined)
      parts.push(`max-stale=${deltaSeconds(value)}`);
    else if (name === 'no-cache' || name === 'no-store' || name === 'only-if-cached') parts.push(name);
  }
  if (parts.length > 0) out['cache-control'] = parts.join(', ');
  out['host'] = VIEW_HOST;
  return { method: 'GET', url: target, headers: out };
}

function responseView(
  facts: ResponseFacts,
  now: number,
): { response: CachePolicy.HttpResponse; explicit: boolean } {
  const { headers, semantics } = facts;
  const cc: string[] = [];
  let explicit = false;
  for (const [name, value] of semantics.directives) {
    switch (name) {
      case 'max-age':
      case 's-maxage':
        explicit = true;
        cc.push(`${name}=${deltaSeconds(value) ?? 0}`);
        break;
      case 'stale-while-revalidate':
      case 'stale-if-error':
        if (deltaSeconds(value) !== undefined) cc.push(`${name}=${deltaSeconds(value)}`);
        break;
      case 'no-store':
        // 5.2.2.3: a cache that understands the status code ignores no-store under must-understand.
        if (!(semantics.directives.has('must-understand') && LIBRARY_STATUSES.has(facts.status)))
          cc.push(name);
        break;
      // Qualified private="f" / no-cache="f" apply to the named fields only, which are not
      // stored (response-semantics.ts); the response itself stays reusable.
      case 'private':
      case 'no-cache':
        if (name === 'private' ? semantics.private : semantics.noCache) cc.push(name);
        break;
      case 'public':
      case 'immutable':
        cc.push(name);
        break;
      default:
        // must-revalidate, proxy-revalidate: see the file comment; unknown ones are ignored (5.2.3).
        break;
    }
  }
  const view: Record<string, string> = {};
  if (cc.length > 0) view['cache-control'] = cc.join(', ');
  // RFC 9213 section 2.2: a cache using a targeted field ignores Cache-Control and Expires.
  if (!semantics.targeted && headers['expires'] !== undefined) {
    explicit = true;
    const expires = parseHttpDate(headers['expires'], now);
    view['expires'] = formatHttpDate(expires ?? 0);
  }
  const date = parseHttpDate(headers['date'], now);
  if (date !== undefined) view['date'] = formatHttpDate(date);
  const lastModified = parseHttpDate(headers['last-modified'], now);
  if (lastModified !== undefined) view['last-modified'] = formatHttpDate(lastModified);
  const etag = firstValue(headers['etag']);
  if (etag !== undefined) view['etag'] = etag;
  // Vary is left out: the store selects variants itself (4.1), normalizing values and
  // comparing credentials by digest, which the library's exact comparison cannot.
  view['age'] = String(correctedInitialAge(facts, date));
  const status = LIBRARY_STATUSES.has(facts.status) ? facts.status : 200;
  return { response: { status, headers: view }, explicit };
}

/**
 * RFC 9111 section 4.2.3: corrected_initial_age = max(apparent_age, age_value + response_delay),
 * in whole seconds (Date has one-second resolution; rounding down keeps a just-received
 * response at age 0).
 */
function correctedInitialAge(facts: ResponseFacts, date: number | undefined): number {
  const apparentAge = date === undefined ? 0 : Math.max(0, facts.responseTime - date) / 1000;
  const responseDelay = Math.max(0, facts.responseTime - facts.requestTime) / 1000;
  return Math.floor(Math.max(apparentAge, ageValue(facts.headers['age']) + responseDelay));
}

/**
 * RFC 9111 section 5.1: of a list (on one field line or several) the first member counts;
 * a value that is not delta-seconds (a sign, a fraction, trailing characters) is ignored.
 */
function ageValue(value: string | string[] | undefined): number {
  return deltaSeconds(joinField(value)?.split(',')[0]?.trim()) ?? 0;
}
