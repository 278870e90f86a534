/**
 * Rewrites the conditional fields of the request the proxy forwards, for a revalidation
 * (RFC 9111 section 4.3.1): the client's own If-None-Match / If-Modified-Since are replaced
 * by the stored response's validators, and the client's conditions are then answered here.
 *
 * The proxy forwards `req.rawHeaders`, so that is what changes (and `req.headers`, kept
 * consistent for any later reader).
 */
import type { IncomingMessage } from 'node:http';

const CONDITIONAL = new Set(['if-none-match', 'if-modified-since']);

/** Replaces the request's If-None-Match / If-Modified-Since with `validators` (absent ones removed). */
export function setRevalidationHeaders(
  req: IncomingMessage,
  validators: { 'if-none-match'?: string | undefined; 'if-modified-since'?: string | undefined },
): void {
  const raw: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] ?? '';
    if (!CONDITIONAL.has(name.toLowerCase())) raw.push(name, req.rawHeaders[i + 1] ?? '');
  }
  for (const name of CONDITIONAL) {
    const value = validators[name as keyof typeof validators];
    if (value !== undefined) raw.push(name, value);
  }
  req.rawHeaders = raw;
  for (const name of CONDITIONAL) {
    const value = validators[name as keyof typeof validators];
    if (value === undefined) delete req.headers[name];
    else req.headers[name] = value;
  }
}
