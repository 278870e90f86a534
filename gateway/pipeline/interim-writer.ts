/**
 * Writes an interim (1xx) response to the client: what `ctx.interim()` does (context.ts). Not
 * to an HTTP/1.0 client (RFC 9110 section 15.2: "MUST NOT send a 1xx response to an HTTP/1.0
 * client"), and not once the final response has started or the client is gone.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { ClientRequest } from './client-request.ts';

/**
 * The methods of Node's ServerResponse and Http2ServerResponse that send 1xx responses, all
 * optional: writeInformation is Node 24.18+ (both), writeProcessing exists on HTTP/1 only.
 */
export interface InterimWriter {
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  writeInformation?: (statusCode: number, headers?: OutgoingHttpHeaders) => unknown;
  writeEarlyHints?: (hints: Record<string, string | string[]>) => unknown;
  writeProcessing?: () => unknown;
}

/** Throws when Node refuses a field (say, a name HTTP/2 forbids). */
export function writeInterim(
  req: ClientRequest,
  res: InterimWriter,
  statusCode: number,
  headers: Record<string, string | string[]>,
): void {
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) return;
  if (res.headersSent || res.writableEnded) return;
  if (typeof res.writeInformation === 'function') {
    res.writeInformation(statusCode, headers);
    return;
  }
  // Before Node 24.18: the two interim responses Node had dedicated methods for.
  if (statusCode === 103 && headers['link'] !== undefined) res.writeEarlyHints?.(headers);
  else if (statusCode === 102) res.writeProcessing?.();
}
