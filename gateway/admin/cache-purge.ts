/**
 * The purge endpoint of the admin listener: `POST /cache/purge?prefix=/v1/orders` drops
 * every stored response whose path starts with the prefix, on this replica and (with Redis)
 * on every other, and answers `{"purged": <count here>, "prefix": ...}`. Only a request the
 * admin guard lets through (admin/purge-guard.ts: token, own Host and Origin, JSON) purges.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpProblem, sendProblem } from '../../shared/errors.ts';
import type { HttpCache } from '../cache/engine/http-cache.ts';

/** Path of the purge endpoint on the admin listener. */
export const PURGE_PATH = '/cache/purge';

/**
 * Handles the request when it is for the purge path; returns false otherwise. `guard` refuses
 * requests that may not change the gateway (a problem), and is required so none can forget it.
 */
export function handlePurge(
  cache: HttpCache,
  req: IncomingMessage,
  res: ServerResponse,
  guard: (req: IncomingMessage) => HttpProblem | undefined,
): boolean {
  const url = new URL(req.url ?? '/', 'http://admin');
  if (url.pathname !== PURGE_PATH) return false;
  // The body is never read: the prefix is in the query.
  req.resume();
  if (req.method !== 'POST') {
    sendProblem(
      res,
      new HttpProblem('ERR_METHOD_NOT_ALLOWED', 'the purge is a POST', { headers: { Allow: 'POST' } }),
    );
    return true;
  }
  const refused = guard(req);
  if (refused !== undefined) {
    sendProblem(res, refused);
    return true;
  }
  const prefix = url.searchParams.get('prefix');
  if (prefix === null || !prefix.startsWith('/')) {
    sendProblem(
      res,
      new HttpProblem('ERR_INVALID_PARAMETER', 'prefix must be a path starting with /', {
        extensions: { errors: [{ parameter: 'prefix', detail: 'a path starting with /' }] },
      }),
    );
    return true;
  }
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify({ purged: cache.purge(prefix), prefix }));
  return true;
}
