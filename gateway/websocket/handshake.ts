/**
 * Whether a request asks for a WebSocket, and whether it asks well enough to be taken: an
 * HTTP/1.1 `Upgrade: websocket` (RFC 6455 §4.1) or an HTTP/2 extended CONNECT with
 * `:protocol: websocket` (RFC 8441 §4; the edge hands the pipeline that one as the GET it
 * becomes upstream, edge/http2.ts). Only the fields are read; nothing is answered here.
 */
import { HttpProblem } from '../../shared/errors.ts';
import type { ClientRequest } from '../pipeline/client-request.ts';

/** What the relay needs of an accepted handshake. */
export interface Handshake {
  /** Over an HTTP/2 stream (RFC 8441): answered 200, with no `Sec-WebSocket-Accept`. */
  readonly http2: boolean;
  /** The client's `Sec-WebSocket-Key` (HTTP/1.1 only), which the answer's accept hashes. */
  readonly key: string | undefined;
  /** The subprotocols the client offers, in its order (`Sec-WebSocket-Protocol`). */
  readonly protocols: readonly string[];
  /** The client's `Origin`, when a browser sent one. */
  readonly origin: string | undefined;
}

/** RFC 6455 §4.1: the key is 16 random bytes in base64, so 24 characters ending in `==`. */
const KEY = /^[A-Za-z0-9+/]{22}==$/;
/** A subprotocol is a token (RFC 6455 §4.1, RFC 9110 §5.6.2). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * True when the request names WebSocket as the protocol it wants, well formed or not. Over
 * HTTP/1.1 `Upgrade` means something only when `Connection` names it (RFC 9110 §7.8: its
 * sender MUST list `upgrade` there): without it the field is a stray hop-by-hop field, which
 * the proxy strips like any other, and the request is served as what it is.
 */
export function asksForWebSocket(req: ClientRequest): boolean {
  if (req.headers[':protocol'] !== undefined) return req.headers[':protocol'] === 'websocket';
  const upgrade = req.headers.upgrade;
  const connection = req.headers.connection;
  return (
    upgrade !== undefined &&
    tokens(upgrade).includes('websocket') &&
    connection !== undefined &&
    tokens(connection).includes('upgrade')
  );
}

/**
 * The handshake of a request that asks for WebSocket, or the 400 problem saying what is
 * missing from it (RFC 6455 §4.2.1: such a request gets an HTTP error, not an upgrade).
 */
export function readHandshake(req: ClientRequest): Handshake {
  const http2 = req.headers[':protocol'] !== undefined;
  const version = req.headers['sec-websocket-version'];
  if (version !== '13')
    throw new HttpProblem('ERR_INVALID_HEADER', 'Sec-WebSocket-Version must be 13', {
      // RFC 6455 section 4.2.2: the versions this server speaks.
      headers: { 'Sec-WebSocket-Version': '13' },
    });
  if (req.method !== 'GET')
    throw new HttpProblem('ERR_BAD_REQUEST', 'a WebSocket handshake is a GET (RFC 6455 §4.1)');
  const key = req.headers['sec-websocket-key'];
  if (!http2) {
    if (!tokens(req.headers.connection ?? '').includes('upgrade'))
      throw new HttpProblem('ERR_INVALID_HEADER', 'a WebSocket handshake needs Connection: Upgrade');
    if (key === undefined || !KEY.test(key))
      throw new HttpProblem('ERR_INVALID_HEADER', 'Sec-WebSocket-Key must be 16 bytes in base64');
  }
  const offered = req.headers['sec-websocket-protocol'];
  const protocols = offered === undefined ? [] : offered.split(',').map((name) => name.trim());
  if (protocols.some((name) => !TOKEN.test(name)) || new Set(protocols).size !== protocols.length)
    throw new HttpProblem('ERR_INVALID_HEADER', 'Sec-WebSocket-Protocol must list distinct tokens');
  return { http2, key: http2 ? undefined : key, protocols, origin: req.headers.origin };
}

function tokens(value: string | readonly string[]): string[] {
  return [value]
    .flat()
    .flatMap((part) => part.split(','))
    .map((token) => token.trim().toLowerCase());
}
