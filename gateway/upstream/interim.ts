/**
 * Interim (1xx) responses from the upstream, relayed to the client (RFC 9110 section 15.2): a
 * 103 Early Hints lets the browser fetch what the final answer will need while the service
 * still works on it. They are informational only: relayed as they come, never stored by the
 * cache and never taken for the final answer (undici hands them to `onInfo`, apart from the
 * final response the proxy relays).
 *
 * Not relayed: 101 (a protocol switch belongs to the upstream connection alone), 100 (the
 * gateway answers a client's `Expect` itself and forwards none; undici also refuses an
 * unsolicited 100 as a broken response, so it ends as a 502), anything to an HTTP/1.0 client
 * (15.2: "MUST NOT send a 1xx response to an HTTP/1.0 client"), and anything once the final
 * response has started.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { GatewayContext } from '../pipeline/context.ts';
import { relayedHeaders } from './forwarded-headers.ts';

/** What undici's `onInfo` receives. */
export interface InterimResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * The methods of Node's ServerResponse and Http2ServerResponse that send 1xx responses, all
 * optional: writeInformation is Node 24.18+ (both), writeProcessing exists on HTTP/1 only.
 */
interface InterimWriter {
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  writeInformation?: (statusCode: number, headers?: OutgoingHttpHeaders) => unknown;
  writeEarlyHints?: (hints: Record<string, string | string[]>) => unknown;
  writeProcessing?: () => unknown;
}

/** An `onInfo` callback for undici that relays the upstream's 1xx responses to this client. */
export function relayInterim(ctx: GatewayContext): (info: InterimResponse) => void {
  return ({ statusCode, headers }) => {
    if (statusCode < 102 || statusCode > 199) return;
    const { req } = ctx;
    if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) return;
    const res = ctx.res as unknown as InterimWriter;
    if (res.headersSent || res.writableEnded || ctx.signal.gone) return;
    try {
      writeInterim(res, statusCode, relayedHeaders(headers));
    } catch (error) {
      // A field Node refuses to send (say, a name HTTP/2 forbids) costs the hint, not the request.
      ctx.log.debug(
        { err: { message: (error as Error).message }, statusCode },
        'interim response not relayed',
      );
    }
  };
}

function writeInterim(
  res: InterimWriter,
  statusCode: number,
  headers: Record<string, string | string[]>,
): void {
  if (typeof res.writeInformation === 'function') {
    res.writeInformation(statusCode, headers);
    return;
  }
  // Before Node 24.18: the two interim responses Node had dedicated methods for.
  if (statusCode === 103 && headers['link'] !== undefined) res.writeEarlyHints?.(headers);
  else if (statusCode === 102) res.writeProcessing?.();
}
