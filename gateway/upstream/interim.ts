/**
 * Interim (1xx) responses from the upstream, relayed to the client (RFC 9110 section 15.2): a
 * 103 Early Hints lets the browser fetch what the final answer will need while the service
 * still works on it. They are informational only: relayed as they come, never stored by the
 * cache and never taken for the final answer (undici hands them to `onInfo`, apart from the
 * final response the proxy relays).
 *
 * Not relayed: 101 (a protocol switch belongs to the upstream connection alone), 100 (the
 * gateway answers a client's `Expect` itself and forwards none; undici also refuses an
 * unsolicited 100 as a broken response, so it ends as a 502). The context's `interim()`
 * (pipeline/interim-writer.ts) keeps 1xx from HTTP/1.0 clients and from a response that has
 * started.
 */
import type { GatewayContext } from '../pipeline/context.ts';
import { relayedHeaders } from './forwarded-headers.ts';

/** What undici's `onInfo` receives. */
export interface InterimResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
}

/** An `onInfo` callback for undici that relays the upstream's 1xx responses to this client. */
export function relayInterim(ctx: GatewayContext): (info: InterimResponse) => void {
  return ({ statusCode, headers }) => {
    if (statusCode < 102 || statusCode > 199) return;
    try {
      ctx.interim(statusCode, relayedHeaders(headers));
    } catch (error) {
      // A field Node refuses to send (say, a name HTTP/2 forbids) costs the hint, not the request.
      ctx.log.debug(
        { err: { message: (error as Error).message }, statusCode },
        'interim response not relayed',
      );
    }
  };
}
