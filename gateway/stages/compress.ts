/**
 * The compress stage, between the cache and the proxy: a response the client may take in br
 * or gzip (its Accept-Encoding, as the negotiate-encoding stage settled it), of a
 * compressible type and at least `minBytes`, is compressed on its way back; the cache above
 * then stores the compressed bytes under `Vary: Accept-Encoding`, so that a hit costs no
 * compression and each encoding is a variant of its own.
 *
 * Left as they are: responses already encoded, without a body or partial (HEAD, 204, 206,
 * 304), marked `no-transform` by either side (RFC 9111 5.2.1.6, 5.2.2.6), of other types, or smaller. Strong
 * entity tags get a suffix per encoding, taken off again on the way upstream (entity-tag.ts).
 *
 * Cost: on a route without the cache, a response below the threshold (the usual JSON answer)
 * is looked at and left with nothing allocated; on a cached route a miss also has the headers
 * going upstream read for tags of ours the cache may have set (entity-tag.ts).
 */
import { preferredEncoding } from '../compression/accept-encoding.ts';
import type { CompressionConfig } from '../config/schema/compression.ts';
import { createEncoder, type ContentCoding, type Encoder } from '../compression/encode.ts';
import { encodedTag, restoreConditionalTags, type RestoredTags } from '../compression/entity-tag.ts';
import { compressibleTypes } from '../compression/media-types.ts';
import {
  bufferedResponse,
  type GatewayContext,
  type GatewayResponse,
  type Stage,
} from '../pipeline/context.ts';
import { mergeVary } from '../foundation/vary.ts';

/** Undefined when compression is off: the stage is then left out of the pipeline. */
export function createCompressStage(config: CompressionConfig): Stage | undefined {
  if (!config.enabled) return undefined;
  const encoder = createEncoder(config);
  const compressible = compressibleTypes(config.types);
  const eligible = (ctx: GatewayContext, response: GatewayResponse): boolean => {
    const { status, headers } = response;
    if (ctx.req.method === 'HEAD' || status < 200 || status === 204 || status === 206 || status === 304)
      return false;
    const size = bodySize(response);
    if (size !== undefined && size < config.minBytes) return false;
    const encoding = headers['content-encoding'];
    if (encoding !== undefined && encoding !== 'identity') return false;
    const type = headers['content-type'];
    if (typeof type !== 'string' || !compressible(type)) return false;
    return !noTransform(headers['cache-control']) && !noTransform(ctx.req.headers['cache-control']);
  };
  return async function compress(ctx, next) {
    const restored = mayCarryTags(ctx) ? restoreConditionalTags(ctx.upstream.headers) : undefined;
    await next();
    const response = ctx.response;
    if (response === undefined) return;
    if (restored !== undefined && response.status === 304) return restoreTag(response, restored);
    if (!eligible(ctx, response)) return;
    // Whether or not this client gets it compressed, another one would: the answer varies.
    mergeVary(response.headers, 'Accept-Encoding');
    const coding = preferredEncoding(ctx.req.headers['accept-encoding']);
    if (coding !== 'identity') ctx.response = encoded(response, coding, encoder);
  };
}

/**
 * Whether a tag of ours can be on its way upstream: the client sent a condition, or the cache
 * may have set its stored validators (a GET or HEAD on a cached route). Other requests are
 * not walked through, which would cost a lower-cased copy of every header name.
 */
function mayCarryTags(ctx: GatewayContext): boolean {
  const { headers, method } = ctx.req;
  return (
    headers['if-none-match'] !== undefined ||
    headers['if-match'] !== undefined ||
    (ctx.upstream.route?.cache === true && (method === 'GET' || method === 'HEAD'))
  );
}

/** RFC 9111 section 5.2.1.6 and 5.2.2.6: no-transform, from either side, forbids compressing. */
function noTransform(cacheControl: string | string[] | undefined): boolean {
  return cacheControl !== undefined && /no-transform/i.test(String(cacheControl));
}

/** The body's length when known: in memory, or declared. */
function bodySize(response: GatewayResponse): number | undefined {
  if (response.bufferedBody !== undefined) return response.bufferedBody.length;
  if (response.body === null) return 0;
  const length = response.headers['content-length'];
  return typeof length === 'string' ? Number(length) : undefined;
}

function encoded(response: GatewayResponse, coding: ContentCoding, encoder: Encoder): GatewayResponse {
  const { headers } = response;
  const buffered = response.bufferedBody;
  if (buffered !== undefined) {
    const compressed = encoder.buffer(buffered, coding);
    // Incompressible after all (already packed data behind a text type): sent as it is.
    if (compressed.length >= buffered.length) return response;
    describeEncoded(headers, coding);
    headers['content-length'] = String(compressed.length);
    const replaced = bufferedResponse(response.status, headers, compressed);
    if (response.problem !== undefined) replaced.problem = response.problem;
    return replaced;
  }
  if (response.body === null) return response;
  const declared = headers['content-length'];
  describeEncoded(headers, coding);
  delete headers['content-length'];
  response.body = encoder.stream(
    response.body,
    coding,
    typeof declared === 'string' ? Number(declared) : undefined,
  );
  return response;
}

function describeEncoded(headers: Record<string, string | string[]>, coding: ContentCoding): void {
  headers['content-encoding'] = coding;
  const etag = headers['etag'];
  if (typeof etag === 'string') headers['etag'] = encodedTag(etag, coding);
  // Ranges and digests of the identity bytes do not describe the encoded ones.
  delete headers['accept-ranges'];
  delete headers['content-md5'];
}

/** A 304 for a tag the client held with a suffix names that tag, as the client knows it. */
function restoreTag(response: GatewayResponse, restored: RestoredTags): void {
  const etag = response.headers['etag'];
  const original = typeof etag === 'string' ? restored.get(etag) : undefined;
  if (original === undefined) return;
  response.headers['etag'] = original;
  if (response.headers['vary'] !== undefined) mergeVary(response.headers, 'Accept-Encoding');
}
