/**
 * The listener's part of an HTTP/2 request before the handler takes it: the refusals HTTP/1.1
 * gets from node:http's parser and timers, given here in HTTP/2's terms.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants, type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from 'node:http2';
import { headersTooLarge, requestTimeout } from './http-hygiene.ts';
import { drainAfterAnswer, headerBytes, stopReceiving, type Http2Limits } from './http2.ts';
import type { Refusals } from './raw-refusal.ts';

/** Header lists past `maxHeaderBytes` one connection may send before it is closed. */
const OVERSIZED_LISTS_PER_CONNECTION = 4;

/**
 * HTTP/2 requests: a header list past `maxHeaderBytes` is answered 431 here, as the HTTP/1
 * parser's overflow is (the fourth on one connection closes it: GOAWAY ENHANCE_YOUR_CALM); a
 * body still arriving after `requestTimeoutMs` is answered 408 (or its stream reset, once an
 * answer has begun). Everything else goes to the handler, which reads
 * the compatibility objects as it reads node:http's.
 */
export function createHttp2Requests(
  limits: Http2Limits,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  refuse: Refusals,
): (req: Http2ServerRequest, res: Http2ServerResponse) => void {
  const oversized = new WeakMap<Http2Session, number>();
  return (req: Http2ServerRequest, res: Http2ServerResponse) => {
    const known = () => ({ method: req.method, target: req.url });
    if (headerBytes(req.rawHeaders) > limits.maxHeaderBytes) {
      refuse.stream(res, headersTooLarge(), known());
      const { session } = req.stream;
      if (session === undefined) return;
      const count = (oversized.get(session) ?? 0) + 1;
      oversized.set(session, count);
      // A client that keeps sending lists past the limit is not one that will send a smaller
      // one: each costs a whole decode for a few bytes on the wire (HPACK amplification).
      if (count >= OVERSIZED_LISTS_PER_CONNECTION && !session.destroyed) {
        session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
        // Once the GOAWAY is written: nothing more of this connection is read.
        setImmediate(() => session.destroy());
      }
      return;
    }
    const { stream } = req;
    // A WebSocket's stream (RFC 8441) stays open both ways for as long as the WebSocket does:
    // what it carries is no request body, bounded by time or drained, but frames, and the
    // websocket stage bounds those. A refusal stops it as any early answer does.
    if (req.headers[':protocol'] !== undefined) stopReceiving(stream);
    else if (!stream.endAfterHeaders) {
      const timer = setTimeout(() => {
        if (stream.destroyed || stream.state.remoteClose === 1) return;
        if (res.headersSent) return stream.close(constants.NGHTTP2_CANCEL);
        refuse.stream(res, requestTimeout(), known());
      }, limits.requestTimeoutMs);
      timer.unref();
      res.once('close', () => clearTimeout(timer));
      // An answer that left before the whole body came: the rest is drained, within bounds.
      drainAfterAnswer(req, limits.maxBodyBytes);
    }
    handle(req as unknown as IncomingMessage, res as unknown as ServerResponse);
  };
}
