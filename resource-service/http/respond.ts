/**
 * Writing JSON responses, with the caching headers every response must state.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GATEWAY_CACHE_CONTROL } from '../../shared/cache-headers.ts';
import { isNotModified } from './conditional.ts';

/** What caches may do with a response: the general rule, and the gateway's own (RFC 9213). */
export interface CachePolicy {
  cacheControl: string;
  gateway?: string;
}

/**
 * Per-customer reads: no shared cache may store them and clients revalidate with the ETag on
 * every use; the Portico gateway alone may keep them for 30 s, per customer, because every
 * write through it drops what it changed (see Portico-Invalidates).
 */
export const PER_CUSTOMER: CachePolicy = { cacheControl: 'private, no-cache', gateway: 'max-age=30' };
export const NO_STORE: CachePolicy = { cacheControl: 'no-store' };

export interface JsonResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  cache: CachePolicy;
}

function setCacheHeaders(res: ServerResponse, cache: CachePolicy): void {
  res.setHeader('Cache-Control', cache.cacheControl);
  if (cache.gateway !== undefined) res.setHeader(GATEWAY_CACHE_CONTROL, cache.gateway);
}

export function sendJson(res: ServerResponse, response: JsonResponse): void {
  res.statusCode = response.status;
  for (const [name, value] of Object.entries(response.headers ?? {})) res.setHeader(name, value);
  setCacheHeaders(res, response.cache);
  if (response.body === undefined) {
    res.end();
    return;
  }
  const text = JSON.stringify(response.body);
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** 304: the validator and caching headers, no body (RFC 9110 section 15.4.5). */
export function sendNotModified(res: ServerResponse, etag: string, cache: CachePolicy): void {
  res.statusCode = 304;
  res.setHeader('ETag', etag);
  setCacheHeaders(res, cache);
  res.end();
}

/**
 * A per-customer read (RFC 9110 section 13.1.2): 304 when the client's If-None-Match names
 * `etag`, else 200 with the body, the ETag and `headers` (a next-page Link, say).
 */
export function sendRepresentation(
  req: IncomingMessage,
  res: ServerResponse,
  representation: { etag: string; body: unknown; headers?: Record<string, string> },
): void {
  const { etag, body, headers } = representation;
  if (isNotModified(req, etag)) {
    sendNotModified(res, etag, PER_CUSTOMER);
    return;
  }
  sendJson(res, { status: 200, body, headers: { ...headers, ETag: etag }, cache: PER_CUSTOMER });
}
