/**
 * A 206 from the upstream kept as a piece of the representation (RFC 9111 sections 3.3 and
 * 3.4): one range with `Content-Range: bytes first-last/total`, a strong ETag, and a response
 * that would be stored as a 200 under the section 3 rules. The pieces are combined into a
 * stored 200 once they cover every byte (http-cache.ts, store/partial-store.ts); the client gets its
 * 206 as it streams, whatever happens to the copy.
 */
import type { GatewayResponse } from '../../pipeline/context.ts';
import { ownCopy, teeBody } from './body-tee.ts';
import type { CacheRequest, Fill, HttpCache } from '../engine/http-cache.ts';
import { firstValue } from '../rules/directives.ts';

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
  const etag = firstValue(response.headers['etag'])?.trim();
  // 3.4: only a strong validator says two pieces belong to one representation.
  if (range === null || etag === undefined || !etag.startsWith('"')) return false;
  const [start, end, total] = [Number(range[1]), Number(range[2]), Number(range[3])];
  if (end < start || end >= total || total > cache.config.maxEntryBytes) return false;
  // Decided as the 200 it will become: the whole length, no Content-Range.
  const headers: Record<string, string | string[]> = { ...response.headers, 'content-length': String(total) };
  delete headers['content-range'];
  const insertion = cache.insert(request, fill, { status: 200, headers });
  if (!insertion.store) return false;
  const length = end - start + 1;
  const add = (bytes: Buffer) => {
    if (bytes.length === length) insertion.addPiece({ etag, total, first: start, bytes });
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
