/**
 * The answer that hands the client's connection to a tunnel (an accepted WebSocket,
 * gateway/websocket/): its head, then the connection itself. Over HTTP/1.1 the head is a
 * `101 Switching Protocols` written to the socket the upgrade request came on
 * (upgrade-request.ts); over HTTP/2 it is a 200 on the request's stream, which then carries
 * the WebSocket's frames (RFC 8441 §5), without the fields HTTP/2 forbids.
 */
import type { ServerResponse } from 'node:http';
import { STATUS_CODES, validateHeaderName, validateHeaderValue } from '../../shared/node-http.ts';
import type { Http2ServerResponse, OutgoingHttpHeaders } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { GatewayResponse, Tunnel } from '../pipeline/context.ts';
// Fields that HTTP/2 does not carry (RFC 9113 §8.2.2), the upgrade's among them.
import { CONNECTION_SPECIFIC, isHttp2Request } from './http2.ts';

/**
 * Writes the head and opens the tunnel; returns the status sent, or undefined when the client
 * was gone (the tunnel is then abandoned).
 */
export function answerWithTunnel(
  req: object,
  res: ServerResponse,
  response: GatewayResponse & { tunnel: Tunnel },
  answerHeaders: Readonly<Record<string, string>>,
): number | undefined {
  const fields = { ...answerHeaders, ...response.headers };
  try {
    if (isHttp2Request(req)) {
      const { stream } = res as unknown as Http2ServerResponse;
      if (stream.destroyed) throw new Error('the stream closed before its answer');
      const h2Fields: OutgoingHttpHeaders = { ':status': 200 };
      for (const [name, value] of Object.entries(fields))
        if (!CONNECTION_SPECIFIC.has(name.toLowerCase())) h2Fields[name.toLowerCase()] = value;
      stream.respond(h2Fields);
      // node:http2's compatibility request reads the stream's DATA as a request body; from
      // now on the frames are the tunnel's.
      stream.removeAllListeners('data');
      response.tunnel.open(stream);
      stream.resume();
      return 200;
    }
    const socket = (req as { socket: Duplex }).socket;
    if (!socket.writable) throw new Error('the socket closed before its answer');
    socket.write(switchingHead(fields));
    response.tunnel.open(socket);
    return 101;
  } catch {
    response.tunnel.abandon();
    return undefined;
  }
}

/** The 101's head as bytes; a field Node would not send (CR, LF) throws. */
function switchingHead(fields: Record<string, string | string[]>): string {
  const lines = [`HTTP/1.1 101 ${STATUS_CODES[101]}`];
  for (const [name, value] of Object.entries(fields)) {
    validateHeaderName(name);
    for (const one of [value].flat()) {
      validateHeaderValue(name, one);
      lines.push(`${name}: ${one}`);
    }
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}
