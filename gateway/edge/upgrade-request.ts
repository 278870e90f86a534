/**
 * HTTP/1.1 requests with `Upgrade` (RFC 9110 §7.8), which Node hands over with their socket
 * instead of a response once anyone listens for them: each becomes a request of the pipeline
 * like any other, with a response written to that socket. The websocket stage either answers
 * it with a tunnel (edge/tunnel-answer.ts) or refuses it; an `Upgrade` to anything else is
 * ignored, as §7.8 lets a server do, and the request served as it is. The connection ends
 * with that answer: Node's parser has left the socket, so no request can follow on it.
 */
import type { IncomingMessage } from 'node:http';
import { ServerResponse } from '../../shared/node-http.ts';
import type { Duplex } from 'node:stream';
import { HttpProblem } from '../../shared/errors.ts';

/** How long a refused connection may take to read its answer before it is cut. */
const CLOSE_GRACE_MS = 1000;

/**
 * The response for an upgrade request, or the problem to answer on the socket when it cannot
 * be served: a body, which the parser that left would have had to read.
 */
export function upgradeResponse(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): ServerResponse | HttpProblem {
  const length = req.headers['content-length'];
  if (req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0'))
    return new HttpProblem('ERR_BAD_REQUEST', 'a request with Upgrade may not carry a body here');
  // Bytes that came after the head (a client that did not wait for the 101) are read again
  // by whoever takes the socket.
  if (head.length > 0) socket.unshift(head);
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket as Parameters<ServerResponse['assignSocket']>[0]);
  res.once('finish', () => {
    socket.end();
    setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
  });
  return res;
}
