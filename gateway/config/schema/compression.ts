/**
 * The `compression` section of the gateway config: which responses the gateway compresses
 * (br or gzip, RFC 9110 section 8.4) and at what cost, and which request content codings the
 * upstreams read.
 */
import { Type, type Static } from '@sinclair/typebox';

/** A media type, or a pattern with one `*` for a whole part or a suffix: `text/*`, `application/*+json`. */
const MEDIA_TYPE_PATTERN = '^[a-z0-9!#$&^_.+-]+/(\\*|\\*\\+[a-z0-9!#$&^_.+-]+|[a-z0-9!#$&^_.+-]+)$';

export const DEFAULT_COMPRESSIBLE_TYPES = [
  'application/json',
  'application/*+json',
  'application/javascript',
  'application/xml',
  'application/*+xml',
  'text/*',
  'image/svg+xml',
];

export const CompressionConfigSchema = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description:
        'Off: responses go out as the upstream sent them and Accept-Encoding is forwarded untouched.',
    }),
    minBytes: Type.Integer({
      minimum: 0,
      default: 1024,
      description:
        'Smallest body compressed. Below it the saving is a few bytes and not worth a compressor; a body of unknown length (streamed) counts as large.',
    }),
    brotliQuality: Type.Integer({
      minimum: 0,
      maximum: 11,
      default: 4,
      description:
        'Brotli quality. 4 compresses the 53 KB OpenAPI document to 7.9 KB in ~0.3 ms of CPU here; 11 saves another 1.5 KB for ~34 ms, a price only static files can pay once.',
    }),
    gzipLevel: Type.Integer({
      minimum: 1,
      maximum: 9,
      default: 5,
      description: 'gzip level (zlib). 5 is within 2% of 9 on JSON here for two thirds of the CPU.',
    }),
    types: Type.Array(Type.String({ pattern: MEDIA_TYPE_PATTERN }), {
      default: DEFAULT_COMPRESSIBLE_TYPES,
      description:
        'Media types compressed, lower case, without parameters; `*` stands for a whole subtype (`text/*`) or before a suffix (`application/*+json`, which takes application/problem+json).',
    }),
    requestEncodings: Type.Array(
      Type.Unsafe<'gzip' | 'br' | 'deflate'>({ type: 'string', enum: ['gzip', 'br', 'deflate'] }),
      {
        default: [],
        uniqueItems: true,
        description:
          'Content codings of request bodies the upstreams read. A body in any other coding is refused at the edge with 415 and `Accept-Encoding` naming what is taken (the resource service reads none).',
      },
    ),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'Response compression at the edge (br, then gzip) for clients that ask, with each encoding cached as its own variant.',
  },
);
/** The validated `compression` section. */
export type CompressionConfig = Static<typeof CompressionConfigSchema>;
