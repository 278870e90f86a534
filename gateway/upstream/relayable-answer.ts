/**
 * What the proxy checks of an upstream answer before it is handed to the stages, while
 * nothing of it has gone to the client: anything found here is a 502, never a head and then a
 * cut. A status out of range; transfer codings the gateway cannot take apart (RFC 9112 §6.1);
 * a body that broke in the same read as its first bytes.
 */
import type { Readable } from 'node:stream';
import type { UpstreamAnswer } from './upstream-call.ts';
import { UpstreamFailure } from './upstream-errors.ts';

/**
 * The answer, its body held whole when it has already ended; throws when it is not usable. An
 * answer that came whole is checked at once and returned as it is, not as a promise: most
 * answers are, and an async frame would cost each of them a promise and a turn of the
 * microtask queue for nothing to wait for.
 */
export function relayableAnswer(answer: UpstreamAnswer): UpstreamAnswer | Promise<UpstreamAnswer> {
  const { stream } = answer;
  // From here on the body may fail at any moment, also while no stage reads it: without a
  // listener its 'error' would be an uncaught exception that ends the process.
  stream?.on('error', ignore);
  const status = answer.statusCode;
  if (status < 200 || status > 599) {
    stream?.destroy();
    throw new UpstreamFailure('malformed', new Error(`status ${status}`));
  }
  if (!decodableTransferCoding(answer.headers['transfer-encoding'])) {
    stream?.destroy();
    throw new UpstreamFailure('malformed', new Error('undecodable transfer coding'));
  }
  if (stream === null) return answer;
  return settledFirstRead(answer, stream);
}

/** A body still arriving: relayable once the read that brought its first bytes is over. */
async function settledFirstRead(answer: UpstreamAnswer, stream: Readable): Promise<UpstreamAnswer> {
  await closesOfThisRead();
  if (stream.errored !== null) throw stream.errored;
  // A chunked body that came whole in that read is held whole, as a body with a length is
  // (upstream-call.ts): its answer goes out in one write, and the cache stores it before its
  // head says so (stages/cache.ts).
  const whole = endedBody(stream);
  return whole === undefined ? answer : { ...answer, whole, stream: null };
}

/**
 * True when `Transfer-Encoding` is absent or exactly one `chunked`, which undici decodes. Any
 * other coding (`gzip, chunked`, `identity`, `chunked` twice) leaves a body that is not the
 * content: relayed, or stored, it would be served as if it were.
 */
export function decodableTransferCoding(value: string | string[] | undefined): boolean {
  if (value === undefined) return true;
  // Two fields arrive as an array; one field naming two codings as a list.
  return typeof value === 'string' && value.trim().toLowerCase() === 'chunked';
}

/**
 * Resolves after the loop's close phase that follows this read. undici fails a body whose
 * framing broke only once the socket it destroyed has closed (a later phase of the same loop
 * turn), while the body's first bytes, parsed from the same packet, are handed over at once:
 * waiting this long (streamed answers only) lets such a body fail before its head is sent.
 */
function closesOfThisRead(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/** The whole body of a stream that has ended but was not read yet; undefined while it goes on. */
function endedBody(stream: Readable): Buffer | undefined {
  // Node's own state: `readableEnded` turns true only once the buffered chunks are read.
  if (!(stream as unknown as { _readableState: { ended: boolean } })._readableState.ended) return undefined;
  const chunks: Buffer[] = [];
  for (let chunk = stream.read() as Buffer | null; chunk !== null; chunk = stream.read() as Buffer | null)
    chunks.push(chunk);
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
}

function ignore(): void {}
