/**
 * The purge endpoint of the admin listener: `POST /cache/purge?prefix=/v1/orders` drops
 * every stored response whose path starts with the prefix, on this replica and (with Redis)
 * on every other, and answers `{"purged": <count here>, "prefix": ...}`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpCache } from './http-cache.ts';

/** Path of the purge endpoint on the admin listener. */
export const PURGE_PATH = '/cache/purge';

/** Handles the request when it is for the purge path; returns false otherwise. */
export function handlePurge(cache: HttpCache, req: IncomingMessage, res: ServerResponse): boolean {
  const url = new URL(req.url ?? '/', 'http://admin');
  if (url.pathname !== PURGE_PATH) return false;
  const send = (status: number, body: unknown) => {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
    res.end(JSON.stringify(body));
  };
  if (req.method !== 'POST') {
    res.setHeader('Allow', 'POST');
    send(405, { status: 'method not allowed' });
    return true;
  }
  const prefix = url.searchParams.get('prefix');
  if (prefix === null || !prefix.startsWith('/')) {
    send(400, { status: 'prefix must be a path starting with /' });
    return true;
  }
  req.resume();
  send(200, { purged: cache.purge(prefix), prefix });
  return true;
}
