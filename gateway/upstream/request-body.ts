/**
 * The client's request body on its way upstream: counted against the limit as it flows, and
 * whatever the upstream did not take (it answered early, failed, or refused the body) read to
 * the end and dropped once the answer went out, so that a connection the answer promised to
 * keep alive is not reset under a client still sending.
 *
 * Own 'data' listeners rather than the async iterator: the iterator's 'readable' listener
 * stays behind on the request and keeps it from ever flowing again, so the rest of a body
 * could not be drained.
 */
import { Readable } from 'node:stream';
import { HttpProblem } from '../../shared/errors.ts';
import { ClientGoneError } from '../pipeline/context.ts';
import type { RequestBody } from '../pipeline/upstream-request.ts';

export interface LimitedBody {
  /** What is sent upstream. */
  stream: Readable;
  /** The 413 problem when the body went past the limit, else undefined. */
  failure(): HttpProblem | undefined;
  /** After the answer: reads and drops the rest of the body, within the same limit. */
  discardRest(): void;
}

/** The 413 problem for a body past `limit`; the unread rest means the connection must close. */
export function tooLarge(limit: number): HttpProblem {
  return new HttpProblem('ERR_PAYLOAD_TOO_LARGE', `request body exceeds the limit of ${limit} bytes`, {
    headers: { Connection: 'close' },
  });
}

/**
 * Waits for the first bytes (or the end) of the body before anything goes upstream: a body
 * malformed from its start (a bad chunk size) never reaches the upstream at all.
 */
export async function readLimitedBody(req: RequestBody, limit: number): Promise<LimitedBody> {
  let seen = 0;
  let failure: HttpProblem | undefined;
  let discarding = false;
  const stream = new Readable({
    read() {
      req.resume();
    },
    destroy(error, callback) {
      if (!discarding) req.pause();
      callback(error);
    },
  });
  // Failures are read through `failure()` and by undici's own listener; with none attached
  // yet (before the upstream request starts), an 'error' would end the process.
  stream.on('error', ignore);
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > limit) {
      failure ??= tooLarge(limit);
      if (discarding) req.destroy();
      else stream.destroy(failure);
      return;
    }
    // A stream undici let go (the upstream answered early) takes nothing more: the chunk is
    // dropped, and the request is not paused again under a drain (http2.ts, drainAfterAnswer).
    if (!discarding && !stream.destroyed && !stream.push(chunk)) req.pause();
  };
  const onEnd = () => stream.push(null);
  const onError = () => stream.destroy(new ClientGoneError());
  req.pause();
  req.on('data', onData);
  req.once('end', onEnd);
  req.once('error', onError);

  await firstBytes(req, stream);
  if (failure !== undefined) throw failure;
  return {
    stream,
    failure: () => failure,
    discardRest() {
      if (req.complete || req.destroyed || failure !== undefined) return;
      discarding = true;
      stream.destroy();
      // The rest still counts against the limit: past it the connection is cut.
      req.resume();
    },
  };
}

function ignore(): void {}

/** Resolves once the request stream holds its first chunk or ended; a client gone rejects. */
function firstBytes(req: RequestBody, stream: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    if (req.complete) return resolve();
    const settle = (error?: Error) => {
      stream.off('readable', onReadable);
      req.off('close', onClose);
      stream.off('error', onStreamError);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onReadable = () => settle();
    const onClose = () => (req.complete ? settle() : settle(new ClientGoneError()));
    const onStreamError = (error: Error) =>
      settle(error instanceof HttpProblem ? error : new ClientGoneError());
    // 'readable' only peeks: the chunk stays buffered for whoever reads the stream next.
    stream.once('readable', onReadable);
    stream.once('error', onStreamError);
    req.once('close', onClose);
    req.resume();
  });
}
