/**
 * Headers by which the resource service instructs the gateway's cache. Both are stripped by
 * the gateway before a response leaves it.
 *
 * - `Portico-Cache-Control` (RFC 9213 targeted cache control, targeted at Portico's gateway):
 *   Cache-Control directives for the gateway alone. On per-customer data it lets the gateway
 *   keep an entry for the customer (and scopes) that made the request, which plain
 *   `Cache-Control: private` forbids a shared cache to do.
 * - `Portico-Invalidates`: on a successful unsafe response, `<path>` references whose stored
 *   responses (any query, any customer) are now stale, beyond the target URI, Location and
 *   Content-Location that RFC 9111 section 4.4 already covers: paying an order changes the
 *   order and the invoice list, not only /v1/payments.
 */
import { canonicalPath } from './canonical-path.ts';

export const GATEWAY_CACHE_CONTROL = 'portico-cache-control';
export const CACHE_INVALIDATES = 'portico-invalidates';

/** The header value for these paths, each in its canonical spelling (the one the gateway caches under). */
export function formatInvalidates(paths: readonly string[]): string {
  return paths.map((path) => `<${canonicalPath(path) ?? path}>`).join(', ');
}

/** Paths of a `Portico-Invalidates` value; malformed members are skipped. */
export function parseInvalidates(value: string | undefined): string[] {
  if (value === undefined) return [];
  return [...value.matchAll(/<(\/[^>\s]*)>/g)].map((m) => m[1] ?? '').filter((p) => p !== '');
}
