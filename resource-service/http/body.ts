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

export async function readJsonBody(req: IncomingMessage, options: BodyOptions): Promise<unknown> {
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
    throw tooLarge(req, options.maxBytes);
  }

  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    received += chunk.length;
    if (received > options.maxBytes) throw tooLarge(req, options.maxBytes);
    chunks.push(chunk);
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

function tooLarge(req: IncomingMessage, maxBytes: number): HttpProblem {
  // Stop reading: the rest of the body is not wanted, and the connection closes after the
  // answer so that unread bytes cannot be taken for the next request.
  req.pause();
  return new HttpProblem('ERR_PAYLOAD_TOO_LARGE', `The body exceeds ${maxBytes} bytes`, {
    headers: { Connection: 'close' },
    extensions: { max_bytes: maxBytes },
  });
}
