/**
 * What stages see of the client's side of the exchange, as types that allow reading only:
 * the request as it arrived (its headers can't be written, its body can't be read: the body
 * goes upstream through `ctx.upstream.body`) and the response's progress (whether its head or
 * its end went out; a write is the request handler's alone, a 1xx goes through `ctx.interim`).
 *
 * Node's IncomingMessage and ServerResponse (and their HTTP/2 compatibility twins) fit these
 * as they are: no wrapper is made per request.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** The client's request, read-only. */
export interface ClientRequest {
  readonly method?: string | undefined;
  /** The target as received: path and query. */
  readonly url?: string | undefined;
  readonly httpVersionMajor: number;
  readonly httpVersionMinor: number;
  /** The fields as Node parsed them, names in lower case: never written by a stage. */
  readonly headers: Readonly<IncomingHttpHeaders>;
  /** The fields as they came, name and value alternating. */
  readonly rawHeaders: readonly string[];
  /** The connection's peer (the client, or a load balancer before it). */
  readonly socket: { readonly remoteAddress?: string | undefined };
}

/** The client's response as stages may watch it: its progress, never a write. */
export interface ResponseProgress {
  readonly headersSent: boolean;
  readonly statusCode: number;
  readonly writableFinished: boolean;
  /** 'finish': the whole answer was handed to the connection; 'close': the response is over. */
  once(event: 'close' | 'finish', listener: () => void): unknown;
}
