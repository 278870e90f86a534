/**
 * One request to an upstream over undici's dispatch API, settled once the answer's head and its
 * first body bytes are in (or it ended): with the body whole in memory when all of it came with
 * the head, as most JSON answers do, or as a stream of what is still arriving.
 *
 * Why not undici's `request()`: it wraps every answer in a body stream of its own, an async
 * resource and an abort listener, and the proxy then waited on that stream for the first bytes
 * and read the whole body back out of it. For an answer that is already whole, none of that is
 * used; here it is not made. A stream is made only for a body still arriving, with undici's
 * pause and resume as its backpressure.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { errors } from '../../shared/undici-parts.ts';
import { EXCHANGE_ID_HEADER } from '../../shared/exchange-id.ts';
import type { ClientSignal } from '../pipeline/client-signal.ts';
import { checkBinding } from './answer-binding.ts';
import type { InterimResponse } from './interim.ts';

export interface UpstreamCallOptions {
  path: string;
  method: string;
  /** Name, value, name, value. */
  headers: string[];
  body: Readable | null;
  /** The client's: once it is gone, the request is aborted or its body cut. */
  signal: ClientSignal;
  /** Each interim (1xx) answer before the final one. */
  onInfo: (info: InterimResponse) => void;
  /**
   * Sent as Portico-Exchange-Id to an upstream that echoes it (answer-binding.ts): an answer
   * without this id is refused and its connection dropped.
   */
  exchangeId?: string | undefined;
}

export interface UpstreamAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  /** The whole body when it came with the head; undefined for HEAD or a body still arriving. */
  whole: Buffer | undefined;
  /** The body still arriving, when `whole` is not it. */
  stream: Readable | null;
}

const EMPTY = Buffer.alloc(0);
/** As undici's own body streams: what is buffered before the upstream connection is paused. */
const HIGH_WATER_MARK = 64 * 1024;

/** Sends the request; resolves with the answer as described above, rejects as undici fails. */
export function callUpstream(dispatcher: Dispatcher, options: UpstreamCallOptions): Promise<UpstreamAnswer> {
  return new Promise((resolve, reject) => {
    const call = new UpstreamCall(options, resolve, reject);
    const { exchangeId } = options;
    // A copy: the same list goes out again on a retry, with another id.
    const headers =
      exchangeId === undefined ? options.headers : options.headers.concat(EXCHANGE_ID_HEADER, exchangeId);
    dispatcher.dispatch({ path: options.path, method: options.method, headers, body: options.body }, call);
  });
}

/** A body still arriving: read() resumes the upstream connection, destroy() aborts it. */
class UpstreamBody extends Readable {
  private readonly controller: Dispatcher.DispatchController;

  constructor(controller: Dispatcher.DispatchController) {
    super({ highWaterMark: HIGH_WATER_MARK });
    this.controller = controller;
  }

  override _read(): void {
    this.controller.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Left before its end: the rest will not be read, so the connection cannot be reused.
    if (!this.readableEnded) this.controller.abort(error ?? new errors.RequestAbortedError());
    callback(error);
  }
}

class UpstreamCall implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private statusCode = 0;
  private headers: IncomingHttpHeaders = {};
  /** The content length the answer declared; -1 without one. */
  private expected = -1;
  private chunks: Buffer[] = [];
  private received = 0;
  private stream: UpstreamBody | null = null;
  private readonly onAbort = () => this.abort();
  private readonly options: UpstreamCallOptions;
  private readonly resolve: (answer: UpstreamAnswer) => void;
  private readonly reject: (error: Error) => void;

  constructor(
    options: UpstreamCallOptions,
    resolve: (answer: UpstreamAnswer) => void,
    reject: (error: Error) => void,
  ) {
    this.options = options;
    this.resolve = resolve;
    this.reject = reject;
    options.signal.once('abort', this.onAbort);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // The client left while the request waited for a connection: it is not sent.
    if (this.options.signal.gone) controller.abort(new errors.RequestAbortedError());
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) {
      this.options.onInfo({ statusCode, headers });
      return;
    }
    // Not the answer to this request: aborting destroys the connection it came on, with
    // whatever else is queued on it, and the call fails with this error.
    const unbound = checkBinding(headers, this.options.exchangeId);
    if (unbound !== undefined) {
      controller.abort(unbound);
      return;
    }
    this.statusCode = statusCode;
    this.headers = headers;
    const length = headers['content-length'];
    this.expected = typeof length === 'string' && length !== '' ? Number(length) : -1;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.stream !== null) {
      if (!this.stream.push(chunk)) controller.pause();
      return;
    }
    this.chunks.push(chunk);
    this.received += chunk.length;
    // All of a declared length is in: the end follows within this same read.
    if (this.received === this.expected) return;
    this.openStream(controller);
  }

  onResponseEnd(): void {
    this.options.signal.off('abort', this.onAbort);
    if (this.stream !== null) {
      this.stream.push(null);
      return;
    }
    const head = this.options.method === 'HEAD';
    let whole: Buffer | undefined;
    if (!head)
      whole =
        this.chunks.length === 1 ? this.chunks[0] : this.received === 0 ? EMPTY : Buffer.concat(this.chunks);
    this.resolve({ statusCode: this.statusCode, headers: this.headers, whole, stream: null });
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.options.signal.off('abort', this.onAbort);
    // Before the answer is out, the call fails; after, its body does.
    if (this.stream !== null) this.stream.destroy(error);
    else this.reject(error);
  }

  /** The body goes on arriving: from here on it is a stream, and the answer is out. */
  private openStream(controller: Dispatcher.DispatchController): void {
    const stream = new UpstreamBody(controller);
    this.stream = stream;
    let more = true;
    for (const chunk of this.chunks) more = stream.push(chunk);
    this.chunks = [];
    if (!more) controller.pause();
    this.resolve({ statusCode: this.statusCode, headers: this.headers, whole: undefined, stream });
  }

  /** The client left: the request is aborted, or the body being relayed cut. */
  private abort(): void {
    const reason = new errors.RequestAbortedError();
    if (this.stream !== null) this.stream.destroy(reason);
    else this.controller?.abort(reason);
  }
}
