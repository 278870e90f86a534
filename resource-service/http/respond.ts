/**
 * Writing JSON responses, with the caching headers every response must state.
 */
import type { ServerResponse } from 'node:http';

/**
 * Per-customer reads: no shared cache may store them (the gateway's cache gets its own,
 * targeted instruction), and clients revalidate with the ETag on every use.
 */
export const PRIVATE_REVALIDATE = 'private, no-cache';
export const NO_STORE = 'no-store';

export interface JsonResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  cacheControl: string;
}

export function sendJson(res: ServerResponse, response: JsonResponse): void {
  res.statusCode = response.status;
  for (const [name, value] of Object.entries(response.headers ?? {})) res.setHeader(name, value);
  res.setHeader('Cache-Control', response.cacheControl);
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
export function sendNotModified(res: ServerResponse, etag: string, cacheControl: string): void {
  res.statusCode = 304;
  res.setHeader('ETag', etag);
  res.setHeader('Cache-Control', cacheControl);
  res.end();
}
