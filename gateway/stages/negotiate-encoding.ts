/**
 * Content codings on the way in, before the cache: the request's Accept-Encoding becomes the
 * one encoding the gateway will answer in (br, gzip or identity), and a request body in a
 * coding the upstreams cannot read is refused with 415 (RFC 9110 section 15.5.16), not left
 * for the service to take for malformed JSON.
 *
 * On cached routes the choice goes upstream as the request's Accept-Encoding
 * (`ctx.upstream.headers`): the cache matches stored variants on it (Vary: Accept-Encoding,
 * stages/cache.ts), and one spelling per choice keeps it at three variants a resource, where
 * clients' spellings would make dozens; the upstream asked for that one encoding answers what
 * fits the variant it is stored as. The client's own field stays as it came (`ctx.req` is
 * read-only). The compress stage (after the cache) does the compressing.
 */
import { HttpProblem } from '../../shared/errors.ts';
import { preferredEncoding } from '../compression/accept-encoding.ts';
import type { CompressionConfig } from '../config/schema/compression.ts';
import type { Stage } from '../pipeline/context.ts';

export function createNegotiateEncodingStage(config: CompressionConfig): Stage {
  const readable = new Set(['identity', ...config.requestEncodings]);
  const acceptEncoding = [...readable].join(', ');
  return function negotiateEncoding(ctx, next) {
    const headers = ctx.req.headers;
    const coding = headers['content-encoding'];
    if (coding !== undefined && ctx.upstream.body !== null)
      refuseUnreadable(coding, readable, acceptEncoding);
    // Only the cache needs one spelling: elsewhere the compress stage reads the client's own
    // field (its answer is remembered per value), and an upstream that encodes by itself
    // answers the client's full list, which the client accepts as it is.
    if (config.enabled && ctx.upstream.route?.cache === true) {
      const sent = headers['accept-encoding'];
      const chosen = preferredEncoding(sent);
      if (sent !== chosen) ctx.upstream.headers.set('accept-encoding', chosen);
    }
    return next();
  };
}

function refuseUnreadable(coding: string, readable: ReadonlySet<string>, acceptEncoding: string): void {
  const unreadable = coding
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '' && !readable.has(name));
  if (unreadable.length === 0) return;
  throw new HttpProblem(
    'ERR_UNSUPPORTED_MEDIA_TYPE',
    `a request body in Content-Encoding ${unreadable.join(', ')} cannot be read here: send it as ${acceptEncoding}`,
    { headers: { 'Accept-Encoding': acceptEncoding } },
  );
}
