/**
 * What a response says about its own caching, read once: the directives that apply to this
 * cache (the targeted field wins, RFC 9213), and the facts the storage and reuse rules need.
 */
import { deltaSeconds, joinField, parseCacheControl, parseTargeted, type Directives } from './directives.ts';

/** Response fields as undici and Node hand them over. */
export type Headers = Record<string, string | string[] | undefined>;

/** A response's caching directives and facts, read once. */
export interface ResponseSemantics {
  /** The directives this cache obeys: the first valid targeted field, else `Cache-Control`. */
  readonly directives: Directives;
  /** The directives came from the targeted field (RFC 9213 section 2.2). */
  readonly targeted: boolean;
  /**
   * Stale must never be served: must-revalidate (RFC 9111 section 5.2.2.2), proxy-revalidate
   * for a shared cache (5.2.2.8), or no-cache (5.2.2.4, "MUST NOT be used ... without ...
   * validation"), and s-maxage, which carries proxy-revalidate's semantics (5.2.2.10). These
   * rule out max-stale, stale-while-revalidate and stale-if-error.
   */
  readonly neverStale: boolean;
  readonly staleWhileRevalidate: number;
  readonly staleIfError: number;
  /** public, s-maxage or must-revalidate: a response to an authorized request may be shared (3.5). */
  readonly sharableWithAuthorization: boolean;
  /** Vary field names, lowercase; `*` included when present. */
  readonly vary: readonly string[];
  /** no-cache and private without field names: the whole response (5.2.2.4, 5.2.2.7). */
  readonly noCache: boolean;
  readonly private: boolean;
  /**
   * Fields named by qualified no-cache="..." or private="...": the rest of the response may
   * be stored and reused, these fields never (a shared cache does not store them at all).
   */
  readonly omittedFields: readonly string[];
}

/**
 * Reads the directives that apply to this cache from a response's fields. `targetedFields` are
 * the targeted fields this cache obeys (config `cache.targetedFields`), in order of precedence:
 * the first present and valid one wins (RFC 9213 section 2.2); an absent, empty or unparsable
 * one is passed over.
 */
export function readSemantics(headers: Headers, targetedFields: readonly string[]): ResponseSemantics {
  let targetedDirectives: Directives | undefined;
  for (const field of targetedFields) {
    targetedDirectives = parseTargeted(headers[field]);
    if (targetedDirectives !== undefined) break;
  }
  const targeted = targetedDirectives !== undefined;
  const directives = targetedDirectives ?? parseCacheControl(headers['cache-control']);
  const has = (name: string) => directives.has(name);
  const noCache = unqualified(directives.get('no-cache'));
  const isPrivate = unqualified(directives.get('private'));
  return {
    directives,
    targeted,
    noCache,
    private: isPrivate,
    omittedFields: [...fieldNames(directives.get('no-cache')), ...fieldNames(directives.get('private'))],
    neverStale: noCache || ['must-revalidate', 'proxy-revalidate', 's-maxage'].some(has),
    staleWhileRevalidate: deltaSeconds(directives.get('stale-while-revalidate')) ?? 0,
    staleIfError: deltaSeconds(directives.get('stale-if-error')) ?? 0,
    sharableWithAuthorization: has('public') || has('s-maxage') || has('must-revalidate'),
    vary: varyFields(headers['vary']),
  };
}

/** The field names of Vary, lowercase. */
export function varyFields(value: string | string[] | undefined): string[] {
  const text = joinField(value);
  if (text === undefined) return [];
  return text
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
}

/** A directive present without a field-name list (`no-cache`, or `no-cache=""`). */
function unqualified(value: string | true | undefined): boolean {
  return value === true || (typeof value === 'string' && value.trim() === '');
}

function fieldNames(value: string | true | undefined): string[] {
  if (typeof value !== 'string') return [];
  return value
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
}
