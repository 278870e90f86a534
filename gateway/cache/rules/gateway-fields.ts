/**
 * The response fields addressed to this gateway alone, which never reach a client: its own
 * targeted cache control and invalidation hints, and every targeted field (RFC 9213) its cache
 * obeys (config `cache.targetedFields`). One list for the response writer, which strips them
 * from every answer, and the cache, which leaves them out of the fields it answers hits with.
 */
import { CACHE_INVALIDATES, GATEWAY_CACHE_CONTROL } from '../../../shared/cache-headers.ts';

export function gatewayOnlyFields(targetedFields: readonly string[]): string[] {
  return [...new Set([GATEWAY_CACHE_CONTROL, CACHE_INVALIDATES, ...targetedFields])];
}
