/**
 * The OpenAPI 3.1 description of the API as clients see it through the gateway, generated from
 * the same TypeBox schemas that validate requests (OpenAPI 3.1 speaks JSON Schema 2020-12, so
 * they go in unchanged). Headers the gateway adds on the way out (RateLimit, WWW-Authenticate
 * on 401) are described here too; headers it strips (Portico-Cache-Control,
 * Portico-Invalidates) are not.
 */
import { Type } from '@sinclair/typebox';
import { errorTable, problemType } from '../shared/errors.ts';
import type { ErrorCode } from '../shared/errors.ts';
import { CUSTOMER_ID_PATTERN } from '../shared/principal.ts';
import {
  Customer,
  INVOICE_STATUSES,
  Invoice,
  ListOf,
  Order,
  OrderInput,
  ORDER_STATUSES,
  OrderPatch,
  Payment,
  PaymentInput,
  Problem,
  User,
} from './schemas.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './routes/list.ts';

type Json = Record<string, unknown>;

/** TypeBox marks schemas with symbols; JSON round-trip leaves plain JSON Schema. */
const plain = (schema: unknown): Json => JSON.parse(JSON.stringify(schema)) as Json;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const responseRef = (name: string) => ({ $ref: `#/components/responses/${name}` });
const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });

// ---- Headers ------------------------------------------------------------------------------

/** ETags are strong (RFC 9110): a quoted opaque string, never `W/`. */
const ETAG_SCHEMA = { type: 'string', pattern: '^"[\\x21\\x23-\\x7e]*"$', maxLength: 64 };

const headers: Json = {
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
const READ_HEADERS = { 'Cache-Control': headerRef('CacheControlPrivate'), ...RATE_LIMIT_HEADERS };
const WRITE_HEADERS = { 'Cache-Control': headerRef('CacheControlNoStore'), ...RATE_LIMIT_HEADERS };
const location = (path: string) => ({
  description: 'Path of the created resource.',
  required: true,
  schema: { type: 'string', format: 'uri-reference', pattern: `^${path}/[0-9a-f-]{36}$`, maxLength: 64 },
});

// ---- Responses ----------------------------------------------------------------------------

const codesOf = (codes: readonly ErrorCode[]) =>
  codes.map((c) => `\`${c}\` (${errorTable[c].title})`).join(', ');

const problem = (codes: readonly ErrorCode[], extraHeaders: Json = {}, note = '') => ({
  description: `${codesOf(codes)}.${note === '' ? '' : ` ${note}`}`,
  headers: { ...WRITE_HEADERS, ...extraHeaders },
  content: { 'application/problem+json': { schema: ref('Problem') } },
});

/** The gateway refuses malformed or ambiguous requests, and credentials in the URL, on any route. */
const GATEWAY_400: readonly ErrorCode[] = ['ERR_BAD_REQUEST', 'ERR_INVALID_HEADER', 'ERR_CREDENTIAL_IN_URL'];
const badRequest = (...codes: ErrorCode[]) => problem([...new Set([...codes, ...GATEWAY_400])]);

const responses: Json = {
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

const common = {
  '401': responseRef('Unauthorized'),
  '429': responseRef('TooManyRequests'),
  '500': responseRef('InternalError'),
  '502': responseRef('BadGateway'),
  '503': responseRef('ServiceUnavailable'),
  '504': responseRef('GatewayTimeout'),
};

const json = (description: string, schema: Json, responseHeaders: Json) => ({
  description,
  headers: responseHeaders,
  content: { 'application/json': { schema } },
});

const unsupportedMediaType = (header: 'Accept-Post' | 'Accept-Patch', types: readonly string[]) =>
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
 * exceed the service's 16 KiB limit on the request head (431).
 */
const ENTITY_TAGS = {
  type: 'string',
  pattern: '^\\s*(?:\\*|(?:W/)?"[^"]*"(?:\\s*,\\s*(?:W/)?"[^"]*")*)\\s*$',
  maxLength: 16_384,
};

const parameters: Json = {
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
    description: 'Order id (UUID). Anything else answers 404.',
    schema: { type: 'string', format: 'uuid', maxLength: 36 },
  },
  PaymentId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'Payment id (UUID). Anything else answers 404.',
    schema: { type: 'string', format: 'uuid', maxLength: 36 },
  },
  CustomerId: {
    name: 'customer_id',
    in: 'path',
    required: true,
    description: "The caller's own customer id (admins: any). Another customer's id answers 404.",
    schema: { type: 'string', pattern: CUSTOMER_ID_PATTERN, maxLength: 128 },
  },
};

const query = (name: string, description: string, schema: Json) => ({
  name,
  in: 'query',
  description,
  schema,
});

/** Parameters of a list whose items are ordered by `sortField` and filtered on `timeField`. */
const listParameters = (sortField: string, timeField: string, statuses: readonly string[]) => [
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

/**
 * OpenAPI's integer formats follow from each integer's range, so they are derived here rather
 * than written twice (Ajv would also need them registered to accept them).
 */
function addIntegerFormats(node: unknown): void {
  if (Array.isArray(node)) {
    node.forEach(addIntegerFormats);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const schema = node as Json;
  const { type, minimum, maximum, format } = schema;
  if (
    type === 'integer' &&
    format === undefined &&
    typeof minimum === 'number' &&
    typeof maximum === 'number'
  ) {
    schema['format'] = minimum >= -(2 ** 31) && maximum <= 2 ** 31 - 1 ? 'int32' : 'int64';
  }
  Object.values(schema).forEach(addIntegerFormats);
}

export function buildOpenApiDocument(): Json {
  const document = {
    openapi: '3.1.0',
    info: {
      title: 'Portico resource API',
      version: '1.0.0',
      description: [
        'Orders, payments, invoices and customers behind the Portico gateway.',
        '',
        "Every request is authenticated with an OAuth 2.0 access token (`Authorization: Bearer`) or a signed API key (`Authorization: ApiKey`); scopes are named in each operation. Every query is scoped to the caller's customer: another customer's resource answers 404, like a missing one.",
        '',
        'Errors are RFC 9457 `application/problem+json` with a stable `code`. Every response states its cacheability with `Cache-Control`. Lists take `limit` (1-100), an opaque `cursor`, `sort` and filters; unknown or malformed parameters are refused with 400, never ignored.',
      ].join('\n'),
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [
      {
        url: '/',
        description:
          'The Portico gateway that served this document, in production or any other environment. HTTPS only.',
        'x-internal': false,
      },
    ],
    security: [{ bearer: [] }, { apiKey: [] }],
    tags: [
      { name: 'orders', description: "The caller's orders and their status." },
      { name: 'payments', description: 'Paying orders.' },
      { name: 'customers', description: 'Customer records and their invoices.' },
      { name: 'users', description: 'The authenticated caller.' },
    ],
    paths: {
      '/v1/orders': {
        get: {
          operationId: 'listOrders',
          tags: ['orders'],
          summary: "List the caller's orders",
          description:
            'Scope `orders:read`. Newest first by default. Admins see every customer and may filter by `customer_id`.',
          parameters: [
            ...listParameters('created_at', 'created', ORDER_STATUSES),
            query('customer_id', 'Admin only (else 403): one customer.', {
              type: 'string',
              pattern: CUSTOMER_ID_PATTERN,
              maxLength: 128,
            }),
          ],
          responses: {
            '200': json('One page of orders.', ref('OrderList'), {
              ETag: headerRef('ETag'),
              Link: headerRef('Link'),
              ...READ_HEADERS,
            }),
            '304': responseRef('NotModified'),
            '400': badRequest('ERR_INVALID_PARAMETER', 'ERR_INVALID_CURSOR'),
            '403': responseRef('Forbidden'),
            ...common,
          },
        },
        post: {
          operationId: 'createOrder',
          tags: ['orders'],
          summary: 'Create an order',
          description:
            'Scope `orders:write`. The order starts `pending`; its total is computed. Send an Idempotency-Key to retry safely.',
          parameters: [parameterRef('IdempotencyKey')],
          requestBody: { required: true, content: { 'application/json': { schema: ref('OrderInput') } } },
          responses: {
            '201': json('Created.', ref('Order'), {
              Location: location('/v1/orders'),
              ETag: headerRef('ETag'),
              'Idempotent-Replayed': headerRef('IdempotentReplayed'),
              ...WRITE_HEADERS,
            }),
            '400': badRequest('ERR_MALFORMED_JSON'),
            '403': responseRef('Forbidden'),
            '409': problem(['ERR_IDEMPOTENCY_IN_FLIGHT'], { 'Retry-After': headerRef('RetryAfter') }),
            '413': responseRef('PayloadTooLarge'),
            '415': unsupportedMediaType('Accept-Post', ['application/json']),
            '422': problem(
              ['ERR_VALIDATION', 'ERR_IDEMPOTENCY_KEY_REUSED'],
              {},
              '`errors` names each offending field by JSON Pointer; read-only fields are reported as such.',
            ),
            ...common,
          },
        },
      },
      '/v1/orders/{id}': {
        parameters: [parameterRef('OrderId')],
        get: {
          operationId: 'getOrder',
          tags: ['orders'],
          summary: 'Read an order',
          description:
            "Scope `orders:read`. Another customer's order answers 404, exactly like a missing one.",
          parameters: [parameterRef('IfNoneMatch')],
          responses: {
            '200': json('The order.', ref('Order'), { ETag: headerRef('ETag'), ...READ_HEADERS }),
            '304': responseRef('NotModified'),
            '400': badRequest(),
            '403': responseRef('Forbidden'),
            '404': responseRef('NotFound'),
            ...common,
          },
        },
        put: {
          operationId: 'replaceOrder',
          tags: ['orders'],
          summary: "Replace a pending order's items and currency",
          description:
            'Scope `orders:write`. Only while the order is `pending`. Fields a client may not set (`id`, `customer_id`, `status`, `total`, ...) are refused with 422.',
          parameters: [parameterRef('IfMatch')],
          requestBody: { required: true, content: { 'application/json': { schema: ref('OrderInput') } } },
          responses: {
            '200': json('The replaced order.', ref('Order'), { ETag: headerRef('ETag'), ...WRITE_HEADERS }),
            '400': badRequest('ERR_MALFORMED_JSON'),
            '403': responseRef('Forbidden'),
            '404': responseRef('NotFound'),
            '409': problem(['ERR_ORDER_NOT_PENDING']),
            '412': responseRef('PreconditionFailed'),
            '413': responseRef('PayloadTooLarge'),
            '415': problem(['ERR_UNSUPPORTED_MEDIA_TYPE']),
            '422': problem(['ERR_VALIDATION']),
            ...common,
          },
        },
        patch: {
          operationId: 'patchOrder',
          tags: ['orders'],
          summary: 'Cancel, ship, deliver, or replace the items of an order (JSON merge patch)',
          description:
            'Scope `orders:write`. RFC 7396. Customers may cancel a pending order and replace its items while it is pending; `shipped` and `delivered` need the `admin` scope; `paid` happens through POST /v1/payments. Setting the status it already has changes nothing.',
          parameters: [parameterRef('IfMatch')],
          requestBody: {
            required: true,
            content: {
              'application/merge-patch+json': { schema: ref('OrderPatch') },
              'application/json': { schema: ref('OrderPatch') },
            },
          },
          responses: {
            '200': json('The order after the change.', ref('Order'), {
              ETag: headerRef('ETag'),
              ...WRITE_HEADERS,
            }),
            '400': badRequest('ERR_MALFORMED_JSON'),
            '403': responseRef('Forbidden'),
            '404': responseRef('NotFound'),
            '409': problem(['ERR_INVALID_TRANSITION', 'ERR_ORDER_NOT_PENDING']),
            '412': responseRef('PreconditionFailed'),
            '413': responseRef('PayloadTooLarge'),
            '415': unsupportedMediaType('Accept-Patch', ['application/merge-patch+json', 'application/json']),
            '422': problem(['ERR_VALIDATION']),
            ...common,
          },
        },
        delete: {
          operationId: 'deleteOrder',
          tags: ['orders'],
          summary: 'Delete a pending or cancelled order',
          description:
            'Scope `orders:write`. Paid, shipped and delivered orders carry a payment and an invoice and are never deleted (409).',
          parameters: [parameterRef('IfMatch')],
          responses: {
            '204': { description: 'Deleted.', headers: WRITE_HEADERS },
            '400': badRequest(),
            '403': responseRef('Forbidden'),
            '404': responseRef('NotFound'),
            '409': problem(['ERR_ORDER_NOT_PENDING']),
            '412': responseRef('PreconditionFailed'),
            ...common,
          },
        },
      },
      '/v1/payments': {
        post: {
          operationId: 'createPayment',
          tags: ['payments'],
          summary: 'Pay a pending order',
          description:
            'Scope `payments:write`. Moves the order to `paid` and issues its invoice in one transaction; an order is paid at most once. The amount must equal the order total. Customers pay their own orders only, admins included. Send an Idempotency-Key to retry safely.',
          parameters: [parameterRef('IdempotencyKey')],
          requestBody: { required: true, content: { 'application/json': { schema: ref('PaymentInput') } } },
          responses: {
            '201': json('Paid.', ref('Payment'), {
              Location: location('/v1/payments'),
              'Idempotent-Replayed': headerRef('IdempotentReplayed'),
              ...WRITE_HEADERS,
            }),
            '400': badRequest('ERR_MALFORMED_JSON'),
            '403': responseRef('Forbidden'),
            '404': responseRef('NotFound'),
            '409': problem(['ERR_ALREADY_PAID', 'ERR_INVALID_TRANSITION', 'ERR_IDEMPOTENCY_IN_FLIGHT'], {
              'Retry-After': headerRef('RetryAfter'),
            }),
            '413': responseRef('PayloadTooLarge'),
            '415': unsupportedMediaType('Accept-Post', ['application/json']),
            '422': problem(['ERR_VALIDATION', 'ERR_AMOUNT_MISMATCH', 'ERR_IDEMPOTENCY_KEY_REUSED']),
            ...common,
          },
        },
      },
      '/v1/payments/{id}': {
        parameters: [parameterRef('PaymentId')],
        get: {
          operationId: 'getPayment',
          tags: ['payments'],
          summary: 'Read a payment',
          description: 'Scope `orders:read`. A payment never changes once made.',
          responses: {
            '200': json('The payment.', ref('Payment'), { ETag: headerRef('ETag'), ...READ_HEADERS }),
            '400': badRequest(),
            '403': responseRef('Forbidden'),
            '404': responseRef('NotFound'),
            ...common,
          },
        },
      },
      '/v1/customers/{customer_id}': {
        parameters: [parameterRef('CustomerId')],
        get: {
          operationId: 'getCustomer',
          tags: ['customers'],
          summary: 'Read a customer',
          description:
            'Any authenticated caller may read its own customer record; admins may read any. The record is created on the first request of a customer.',
          parameters: [parameterRef('IfNoneMatch')],
          responses: {
            '200': json('The customer.', ref('Customer'), { ETag: headerRef('ETag'), ...READ_HEADERS }),
            '304': responseRef('NotModified'),
            '400': badRequest(),
            '404': responseRef('NotFound'),
            ...common,
          },
        },
      },
      '/v1/customers/{customer_id}/invoices': {
        parameters: [parameterRef('CustomerId')],
        get: {
          operationId: 'listInvoices',
          tags: ['customers'],
          summary: "List a customer's invoices",
          description: 'Scope `invoices:read`. Newest first by default.',
          parameters: listParameters('issued_at', 'issued', INVOICE_STATUSES),
          responses: {
            '200': json('One page of invoices.', ref('InvoiceList'), {
              ETag: headerRef('ETag'),
              Link: headerRef('Link'),
              ...READ_HEADERS,
            }),
            '304': responseRef('NotModified'),
            '400': badRequest('ERR_INVALID_PARAMETER', 'ERR_INVALID_CURSOR'),
            '403': responseRef('Forbidden'),
            '404': responseRef('NotFound'),
            ...common,
          },
        },
      },
      '/v1/users/me': {
        get: {
          operationId: 'getCurrentUser',
          tags: ['users'],
          summary: 'Who the caller is',
          description:
            'The principal the gateway verified: subject, customer, scopes and how it authenticated.',
          responses: {
            '200': json('The authenticated principal.', ref('User'), WRITE_HEADERS),
            '400': badRequest(),
            ...common,
          },
        },
      },
    },
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'RFC 9068 access token (`typ: at+jwt`) from the configured issuer, verified as RFC8725 (JWT Best Current Practices) recommends: an allow-list of asymmetric algorithms (never `none` or HS*), iss, aud, exp and nbf checked with a bounded clock skew, keys only from the configured JWKS (never `jku`, `x5u` or an embedded `jwk`).',
        },
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description:
            '`Authorization: ApiKey <key>`: a signed, revocable API key. Never accepted in the URL.',
        },
      },
      schemas: {
        Order: plain(Order),
        OrderInput: plain(OrderInput),
        OrderPatch: plain(OrderPatch),
        OrderList: plain(ListOf(Type.Unsafe(ref('Order')), MAX_PAGE_SIZE)),
        Payment: plain(Payment),
        PaymentInput: plain(PaymentInput),
        Invoice: plain(Invoice),
        InvoiceList: plain(ListOf(Type.Unsafe(ref('Invoice')), MAX_PAGE_SIZE)),
        Customer: plain(Customer),
        User: plain(User),
        Problem: {
          ...plain(Problem),
          description: `RFC 9457 problem details. Types: ${Object.keys(errorTable)
            .map((c) => `${problemType(c as ErrorCode)} (${c})`)
            .join(', ')}.`,
        },
      },
      headers,
      responses,
      parameters,
    },
  };
  addIntegerFormats(document);
  return document;
}
