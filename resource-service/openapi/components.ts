/**
 * The reusable parts of the OpenAPI document (headers, responses, parameters) and the small
 * builders the route table describes its operations with. Headers the gateway adds on the way
 * out (RateLimit, WWW-Authenticate on 401) are described here too; headers it strips
 * (Portico-Cache-Control, Portico-Invalidates) are not.
 */
import { errorTable } from '../../shared/errors.ts';
import type { ErrorCode } from '../../shared/errors.ts';
import { CUSTOMER_ID_PATTERN } from '../../shared/principal.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, UUID_PATTERN } from '../model/limits.ts';

export type Json = Record<string, unknown>;

/** TypeBox marks schemas with symbols; JSON round-trip leaves plain JSON Schema. */
export const plain = (schema: unknown): Json => JSON.parse(JSON.stringify(schema)) as Json;
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
export const responseRef = (name: string) => ({ $ref: `#/components/responses/${name}` });
export const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });

// ---- Headers ------------------------------------------------------------------------------

/** ETags are strong (RFC 9110): a quoted opaque string, never `W/`. */
const ETAG_SCHEMA = { type: 'string', pattern: '^"[\\x21\\x23-\\x7e]*"$', maxLength: 64 };

export const headers: Json = {
  ETag: { description: 'Strong entity-tag of this representation.', required: true, schema: ETAG_SCHEMA },
  CacheControlPrivate: {
    description:
      'Per-customer data: no shared cache may store it, and clients revalidate with the ETag on every use.',
    required: true,
    schema: { type: 'string', const: 'private, no-cache' },
  },
  CacheControlNoStore: {
    description: 'Writes and errors are never stored by any cache.',
    required: true,
    schema: { type: 'string', const: 'no-store' },
  },
  Link: {
    description:
      'RFC 8288 `<URL>; rel="next"`: this request with the cursor of the next page. Absent on the last page.',
    schema: { type: 'string', pattern: '^<[^>]+>; rel="next"$', maxLength: 2048 },
  },
  RateLimit: {
    description:
      'IETF httpapi RateLimit header: per policy, `"name";r=REMAINING;t=SECONDS_TO_RESET`. Set by the gateway on every answer that one of its rate-limit policies counted (the default policy counts every authenticated request).',
    schema: {
      type: 'string',
      pattern: '^"[A-Za-z0-9_-]{1,64}";r=[0-9]+;t=[0-9]+(, "[A-Za-z0-9_-]{1,64}";r=[0-9]+;t=[0-9]+)*$',
    },
  },
  RateLimitPolicy: {
    description:
      'IETF httpapi RateLimit-Policy header: per policy, `"name";q=LIMIT;w=WINDOW_SECONDS`. Set together with RateLimit.',
    schema: {
      type: 'string',
      pattern: '^"[A-Za-z0-9_-]{1,64}";q=[0-9]+;w=[0-9]+(, "[A-Za-z0-9_-]{1,64}";q=[0-9]+;w=[0-9]+)*$',
    },
  },
  RetryAfter: {
    description: 'Seconds to wait before retrying (RFC 9110).',
    schema: { type: 'integer', minimum: 1, maximum: 2_147_483_647 },
  },
  WWWAuthenticateBearer: {
    description:
      'RFC 6750 challenge: `Bearer realm="portico"`, with `error="invalid_token"` and a fixed `error_description` when a credential was sent and refused.',
    required: true,
    schema: { type: 'string', pattern: '^Bearer realm="portico"' },
  },
  WWWAuthenticateScope: {
    description: 'RFC 6750 `Bearer error="insufficient_scope"`, naming the scope the request needs.',
    schema: { type: 'string', pattern: '^Bearer .*error="insufficient_scope"', maxLength: 512 },
  },
  IdempotentReplayed: {
    description:
      'Present when this is the stored answer to an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', const: 'true' },
  },
};

/** On every answer that passed the gateway's rate-limit stage: everything but 401. */
const RATE_LIMIT_HEADERS = {
  RateLimit: headerRef('RateLimit'),
  'RateLimit-Policy': headerRef('RateLimitPolicy'),
};
export const READ_HEADERS = { 'Cache-Control': headerRef('CacheControlPrivate'), ...RATE_LIMIT_HEADERS };
export const WRITE_HEADERS = { 'Cache-Control': headerRef('CacheControlNoStore'), ...RATE_LIMIT_HEADERS };
export const location = (path: string) => ({
  description: 'Path of the created resource.',
  required: true,
  schema: { type: 'string', format: 'uri-reference', pattern: `^${path}/[0-9a-f-]{36}$`, maxLength: 64 },
});

// ---- Responses ----------------------------------------------------------------------------

const codesOf = (codes: readonly ErrorCode[]) =>
  codes.map((c) => `\`${c}\` (${errorTable[c].title})`).join(', ');

export const problem = (codes: readonly ErrorCode[], extraHeaders: Json = {}, note = '') => ({
  description: `${codesOf(codes)}.${note === '' ? '' : ` ${note}`}`,
  headers: { ...WRITE_HEADERS, ...extraHeaders },
  content: { 'application/problem+json': { schema: ref('Problem') } },
});

/** The gateway refuses malformed or ambiguous requests, and credentials in the URL, on any route. */
const GATEWAY_400: readonly ErrorCode[] = ['ERR_BAD_REQUEST', 'ERR_INVALID_HEADER', 'ERR_CREDENTIAL_IN_URL'];
export const badRequest = (...codes: ErrorCode[]) => problem([...new Set([...codes, ...GATEWAY_400])]);

export const responses: Json = {
  NotModified: {
    description: 'Not modified: the If-None-Match tag still matches. No body.',
    headers: { ETag: headerRef('ETag'), ...READ_HEADERS },
  },
  Unauthorized: {
    description: `${codesOf(['ERR_UNAUTHENTICATED', 'ERR_INVALID_TOKEN'])}. Answered by the gateway before rate limiting; repeated failures from one address are refused with 429.`,
    headers: {
      'WWW-Authenticate': headerRef('WWWAuthenticateBearer'),
      'Cache-Control': headerRef('CacheControlNoStore'),
    },
    content: { 'application/problem+json': { schema: ref('Problem') } },
  },
  Forbidden: problem(['ERR_INSUFFICIENT_SCOPE'], { 'WWW-Authenticate': headerRef('WWWAuthenticateScope') }),
  NotFound: problem(['ERR_NOT_FOUND'], {}, "Another customer's resource answers exactly like a missing one."),
  PreconditionFailed: problem(
    ['ERR_PRECONDITION_FAILED'],
    { ETag: headerRef('ETag') },
    'ETag carries the current tag.',
  ),
  PayloadTooLarge: problem(['ERR_PAYLOAD_TOO_LARGE']),
  TooManyRequests: problem(
    ['ERR_RATE_LIMITED'],
    {
      'Retry-After': { ...(headers['RetryAfter'] as Json), required: true },
      RateLimit: { ...(headers['RateLimit'] as Json), required: true },
      'RateLimit-Policy': { ...(headers['RateLimitPolicy'] as Json), required: true },
    },
    'A rate-limit policy of the gateway, or its limit on failed authentications per address, is exceeded.',
  ),
  InternalError: problem(['ERR_INTERNAL']),
  BadGateway: problem(['ERR_BAD_GATEWAY']),
  ServiceUnavailable: problem(['ERR_SERVICE_UNAVAILABLE'], { 'Retry-After': headerRef('RetryAfter') }),
  GatewayTimeout: problem(['ERR_GATEWAY_TIMEOUT']),
};

export const common = {
  '401': responseRef('Unauthorized'),
  '429': responseRef('TooManyRequests'),
  '500': responseRef('InternalError'),
  '502': responseRef('BadGateway'),
  '503': responseRef('ServiceUnavailable'),
  '504': responseRef('GatewayTimeout'),
};

export const json = (description: string, schema: Json, responseHeaders: Json) => ({
  description,
  headers: responseHeaders,
  content: { 'application/json': { schema } },
});

export const unsupportedMediaType = (header: 'Accept-Post' | 'Accept-Patch', types: readonly string[]) =>
  problem(['ERR_UNSUPPORTED_MEDIA_TYPE'], {
    [header]: {
      description: 'The media types this request accepts (absent when only the charset was wrong).',
      schema: { type: 'string', const: types.join(', ') },
    },
  });

// ---- Parameters ---------------------------------------------------------------------------

/** The longest RFC 3339 time the list parser takes: nanoseconds and a numeric offset. */
const QUERY_TIME = { type: 'string', format: 'date-time', maxLength: 35 };

/**
 * `*` or a list of entity-tags (RFC 9110 section 13.1); anything else is a 400. No header can
 * exceed the service's 24 KiB limit on the request head (431).
 */
const ENTITY_TAGS = {
  type: 'string',
  pattern: '^\\s*(?:\\*|(?:W/)?"[^"]*"(?:\\s*,\\s*(?:W/)?"[^"]*")*)\\s*$',
  maxLength: 16_384,
};

export const parameters: Json = {
  limit: {
    name: 'limit',
    in: 'query',
    description: `Page size, 1 to ${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}. Outside that range: 400.`,
    schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
  },
  cursor: {
    name: 'cursor',
    in: 'query',
    description: 'The next_cursor of the previous page, with the same filters and sort (else 400).',
    schema: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,512}$', maxLength: 512 },
  },
  IfNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    description: 'ETags the client holds (or `*`); a match answers 304 without a body.',
    schema: ENTITY_TAGS,
  },
  IfMatch: {
    name: 'If-Match',
    in: 'header',
    description: 'Apply only if the order still has one of these strong ETags (or `*`); else 412.',
    schema: ENTITY_TAGS,
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    description:
      'IETF httpapi Idempotency-Key: 1 to 255 printable ASCII characters, bare or as a quoted string. The same key and body replay the first answer (with Idempotent-Replayed: true); the same key with another body is 422; while the first request still runs, 409. Keys live 24 h, per customer; only successes are stored.',
    schema: {
      type: 'string',
      pattern: '^(?:[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,255}|"[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,255}")$',
      maxLength: 257,
    },
  },
  OrderId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'Order id (a UUID in lower case). Any other value answers 404, as an unknown order.',
    schema: { type: 'string', format: 'uuid', pattern: UUID_PATTERN, maxLength: 36 },
  },
  PaymentId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'Payment id (a UUID in lower case). Any other value answers 404, as an unknown payment.',
    schema: { type: 'string', format: 'uuid', pattern: UUID_PATTERN, maxLength: 36 },
  },
  CustomerId: {
    name: 'customer_id',
    in: 'path',
    required: true,
    description:
      "The caller's own customer id (admins: any). Another customer's id answers 404, and so does a value outside this pattern, which no customer can have.",
    schema: { type: 'string', pattern: CUSTOMER_ID_PATTERN, maxLength: 128 },
  },
};

export const query = (name: string, description: string, schema: Json) => ({
  name,
  in: 'query',
  description,
  schema,
});

/** Parameters of a list whose items are ordered by `sortField` and filtered on `timeField`. */
export const listParameters = (sortField: string, timeField: string, statuses: readonly string[]) => [
  parameterRef('limit'),
  parameterRef('cursor'),
  query('sort', `Order by ${sortField}, ascending; \`-${sortField}\` (the default) for newest first.`, {
    type: 'string',
    enum: [sortField, `-${sortField}`],
    default: `-${sortField}`,
  }),
  query('status', 'Only items with this status.', { type: 'string', enum: [...statuses] }),
  query(
    `${timeField}_after`,
    `Only items whose ${sortField} is strictly after this RFC 3339 time.`,
    QUERY_TIME,
  ),
  query(
    `${timeField}_before`,
    `Only items whose ${sortField} is strictly before this RFC 3339 time.`,
    QUERY_TIME,
  ),
  parameterRef('IfNoneMatch'),
];
