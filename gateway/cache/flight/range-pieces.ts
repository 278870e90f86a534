/**
 * A 206 from the upstream kept as a piece of the representation (RFC 9111 sections 3.3 and
 * 3.4): one range with `Content-Range: bytes first-last/total`, a strong validator, and a
 * response that would be stored as a 200 under the section 3 rules. The pieces are combined into a
 * stored 200 once they cover every byte (http-cache.ts, store/partial-store.ts); the client gets its
 * 206 as it streams, whatever happens to the copy.
 */
import { Readable } from 'node:stream';
import { bufferedResponse, type GatewayResponse } from '../../pipeline/context.ts';
import { ownCopy, teeBody } from './body-tee.ts';
import type { CacheRequest, Fill, HttpCache, Prefix } from '../engine/http-cache.ts';
import { firstValue } from '../rules/directives.ts';
import { strongLastModified } from '../answer/ranges.ts';

const CONTENT_RANGE = /^bytes ([0-9]{1,15})-([0-9]{1,15})\/([0-9]{1,15})$/;

/**
 * Keeps a copy of `response` as a piece when it qualifies. True when the copy is taken from
 * the body as it streams: `fill` then ends with the body; false: the caller ends it.
 */
export function keepPiece(
  cache: HttpCache,
  request: CacheRequest,
  fill: Fill,
  response: GatewayResponse,
): boolean {
  if (response.status !== 206) return false;
  const range = CONTENT_RANGE.exec(firstValue(response.headers['content-range'])?.trim() ?? '');
  const validator = strongValidator(response.headers);
  // 3.4: only a strong validator says two pieces belong to one representation.
  if (range === null || validator === undefined) return false;
  const [start, end, total] = [Number(range[1]), Number(range[2]), Number(range[3])];
  if (end < start || end >= total || total > cache.config.maxEntryBytes) return false;
  // Decided as the 200 it will become: the whole length, no Content-Range.
  const headers: Record<string, string | string[]> = { ...response.headers, 'content-length': String(total) };
  delete headers['content-range'];
  const insertion = cache.insert(request, fill, { status: 200, headers });
  if (!insertion.store) return false;
  const length = end - start + 1;
  const add = (bytes: Buffer) => {
    if (bytes.length === length) insertion.addPiece({ validator, total, first: start, bytes });
  };
  const buffered = response.bufferedBody;
  if (buffered !== undefined) {
    add(ownCopy([buffered], buffered.length));
    return false;
  }
  if (response.body === null) return false;
  response.body = teeBody(response.body, length, add, () => fill.end());
  return true;
}

/**
 * The piece's strong validator as it can be sent in If-Range (RFC 9110 section 13.1.5): a
 * strong ETag; else, with no ETag at all, a strong Last-Modified. A weak ETag makes the date
 * unusable too: a client "MUST NOT" send a date in If-Range when it has an entity tag.
 */
export function strongValidator(headers: Record<string, string | string[]>): string | undefined {
  const etag = firstValue(headers['etag'])?.trim();
  if (etag !== undefined) return etag.startsWith('"') ? etag : undefined;
  const lastModified = firstValue(headers['last-modified'])?.trim();
  return strongLastModified(headers) === undefined ? undefined : lastModified;
}

/**
 * The whole representation from the first bytes `held` and `answer`, the upstream's 206 to a
 * request of the rest (RFC 9111 section 3.4): a 200 with the 206's fields (the new response's,
 * as 3.4 says) less Content-Range. Undefined unless the 206 carries the held pieces' strong
 * validator and length and runs from at most the held length to the last byte.
 */
export function completeWith(held: Prefix, answer: GatewayResponse): GatewayResponse | undefined {
  if (answer.status !== 206 || answer.problem !== undefined) return undefined;
  const range = CONTENT_RANGE.exec(firstValue(answer.headers['content-range'])?.trim() ?? '');
  if (range === null || strongValidator(answer.headers) !== held.validator) return undefined;
  const [first, last, total] = [Number(range[1]), Number(range[2]), Number(range[3])];
  if (total !== held.total || first > held.bytes.length || last !== total - 1) return undefined;
  const headers: Record<string, string | string[]> = { ...answer.headers, 'content-length': String(total) };
  delete headers['content-range'];
  const before = held.bytes.subarray(0, first);
  const buffered = answer.bufferedBody;
  if (buffered !== undefined)
    return buffered.length === last - first + 1
      ? bufferedResponse(200, headers, Buffer.concat([before, buffered]))
      : undefined;
  if (answer.body === null) return undefined;
  return { status: 200, headers, body: Readable.from(prefixed(before, answer.body)) };
}

async function* prefixed(before: Buffer, rest: Readable): AsyncGenerator<Buffer> {
  yield before;
  for await (const chunk of rest) yield chunk as Buffer;
}
