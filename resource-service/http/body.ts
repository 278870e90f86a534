/**
 * Reads a JSON request body with a hard size cap, without trusting Content-Length.
 *
 * Our own reader rather than @polka/parse: that one calls next(err) once per chunk past its
 * limit, and the second error handler then fails with ERR_HTTP_HEADERS_SENT.
 */
import type { IncomingMessage } from 'node:http';
import { HttpProblem } from '../../shared/errors.ts';

export interface BodyOptions {
  maxBytes: number;
  /** Accepted media types, lower case, without parameters. */
  mediaTypes: readonly string[];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The media type of a Content-Type value, lower-cased, or undefined when absent. */
function mediaTypeOf(contentType: string | undefined): { type: string; charset?: string } | undefined {
  if (contentType === undefined) return undefined;
  const [type = '', ...parameters] = contentType.split(';');
  const charset = parameters
    .map((p) => p.trim().toLowerCase())
    .find((p) => p.startsWith('charset='))
    ?.slice('charset='.length)
    .replaceAll('"', '');
  return { type: type.trim().toLowerCase(), ...(charset === undefined ? {} : { charset }) };
}

/**
 * Refuses a body in any content coding but identity: this service does not decompress, and
 * compressed bytes are not malformed JSON but a format it does not take (RFC 9110 15.5.16).
 */
function assertIdentityCoding(req: IncomingMessage): void {
  const codings = (req.headers['content-encoding'] ?? '')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length > 0) {
    throw new HttpProblem(
      'ERR_UNSUPPORTED_MEDIA_TYPE',
      `Content-Encoding ${codings.join(', ')} is not supported: send the body uncompressed`,
      { headers: { 'Accept-Encoding': 'identity' } },
    );
  }
}

export async function readJsonBody(req: IncomingMessage, options: BodyOptions): Promise<unknown> {
  assertIdentityCoding(req);
  const media = mediaTypeOf(req.headers['content-type']);
  if (media === undefined || !options.mediaTypes.includes(media.type)) {
    throw new HttpProblem(
      'ERR_UNSUPPORTED_MEDIA_TYPE',
      `Send the body as ${options.mediaTypes.join(' or ')}`,
      {
        headers: { [req.method === 'PATCH' ? 'Accept-Patch' : 'Accept-Post']: options.mediaTypes.join(', ') },
      },
    );
  }
  if (media.charset !== undefined && media.charset !== 'utf-8') {
    throw new HttpProblem('ERR_UNSUPPORTED_MEDIA_TYPE', 'JSON bodies must be UTF-8');
  }

  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > options.maxBytes) {
    throw tooLarge(req, options.maxBytes, Number(declared));
  }

  const chunks: Buffer[] = [];
  let received = 0;
  // Not destroyed on an early exit: destroying the request resets the socket, and the 413
  // written just before would be lost with it.
  try {
    for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      received += chunk.length;
      if (received > options.maxBytes) throw tooLarge(req, options.maxBytes, received);
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof HttpProblem) throw error;
    // The client stopped sending (its `aborted` ECONNRESET): its fault, and no one to answer.
    // Thrown as what it is, so that it is never taken for the database's ECONNRESET (503).
    throw new HttpProblem('ERR_BAD_REQUEST', 'The request body was cut off before its end', { cause: error });
  }
  if (received === 0) throw new HttpProblem('ERR_MALFORMED_JSON', 'A JSON body is required');

  let text: string;
  try {
    text = utf8.decode(Buffer.concat(chunks, received));
  } catch {
    throw new HttpProblem('ERR_MALFORMED_JSON', 'The body is not valid UTF-8');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HttpProblem('ERR_MALFORMED_JSON', `The body is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * How much of a refused body is read and thrown away so that the connection stays usable.
 * Closing with unread bytes in the socket makes the kernel answer them with a reset, which
 * destroys the 413 on its way: the client (or the gateway) sees a cut connection instead.
 * Past this, the connection is closed: a client sending that much gets the reset it asked for.
 */
const DISCARD_LIMIT_BYTES = 8 * 1024 * 1024;

function tooLarge(req: IncomingMessage, maxBytes: number, seenBytes: number): HttpProblem {
  const keepConnection = seenBytes <= DISCARD_LIMIT_BYTES;
  if (keepConnection) discardRest(req);
  else req.pause();
  return new HttpProblem('ERR_PAYLOAD_TOO_LARGE', `The body exceeds ${maxBytes} bytes`, {
    extensions: { max_bytes: maxBytes },
    ...(keepConnection ? {} : { headers: { Connection: 'close' } }),
  });
}

/** Reads the rest of the body into nothing, up to the limit; past it, the socket is cut. */
function discardRest(req: IncomingMessage): void {
  let discarded = 0;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DISCARD_LIMIT_BYTES) req.socket.destroy();
  });
  req.resume();
}
