/**
 * The OpenAPI 3.1 description of the service, generated from the same TypeBox schemas that
 * validate requests (OpenAPI 3.1 speaks JSON Schema 2020-12, so they go in unchanged).
 */
import { errorTable, problemType } from '../shared/errors.ts';
import type { ErrorCode } from '../shared/errors.ts';
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

const problemResponse = (...codes: ErrorCode[]) => ({
  description: codes.map((c) => `${c}: ${errorTable[c].title}`).join('; '),
  content: { 'application/problem+json': { schema: ref('Problem') } },
});

const jsonResponse = (description: string, schema: Json, headers: Json = {}) => ({
  description,
  headers,
  content: { 'application/json': { schema } },
});

const header = (description: string) => ({ description, schema: { type: 'string' } });
const ETAG = header('Strong entity-tag of this representation.');
const CACHE_CONTROL = header('Cacheability of this response.');

const common = {
  '401': problemResponse('ERR_UNAUTHENTICATED', 'ERR_INVALID_TOKEN'),
  '429': {
    ...problemResponse('ERR_RATE_LIMITED'),
    headers: { 'Retry-After': header('Seconds until the limit resets.') },
  },
  '500': problemResponse('ERR_INTERNAL'),
};

const queryParam = (name: string, description: string, schema: Json) => ({
  name,
  in: 'query',
  description,
  schema,
});
const pathParam = (name: string, description: string, schema: Json = { type: 'string' }) => ({
  name,
  in: 'path',
  required: true,
  description,
  schema,
});
const pageParams = (sortField: string, timeField: string, statuses: Json) => [
  queryParam('limit', `Page size, ${1} to ${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}.`, {
    type: 'integer',
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    default: DEFAULT_PAGE_SIZE,
  }),
  queryParam('cursor', 'The next_cursor of the previous page.', { type: 'string', maxLength: 512 }),
  queryParam('sort', `Order by ${sortField}; prefix - for newest first (default).`, {
    type: 'string',
    enum: [sortField, `-${sortField}`],
  }),
  queryParam('status', 'Only this status.', statuses),
  queryParam(`${timeField}_after`, `Only ${sortField} strictly after this time.`, {
    type: 'string',
    format: 'date-time',
  }),
  queryParam(`${timeField}_before`, `Only ${sortField} strictly before this time.`, {
    type: 'string',
    format: 'date-time',
  }),
];
const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  description:
    'IETF httpapi Idempotency-Key: the same key and body replay the first answer (Idempotent-Replayed: true); another body is 422; a twin still running is 409. Keys live 24 h, per customer.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};
const ifMatch = {
  name: 'If-Match',
  in: 'header',
  description: 'Apply only if the order still has this ETag; else 412.',
  schema: { type: 'string' },
};
const orderId = pathParam('id', 'Order id (UUID).', { type: 'string', format: 'uuid' });
const LINK = header('`<...>; rel="next"` when there is a next page.');

export function buildOpenApiDocument(): Json {
  const orderSchema = plain(Order);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Portico resource API',
      version: '1.0.0',
      description:
        'Orders, payments, invoices and customers behind the Portico gateway. Every request is authenticated with an OAuth 2.0 access token (Authorization: Bearer) or a signed API key (Authorization: ApiKey). Errors are RFC 9457 problem+json with a stable `code`.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }, { apiKey: [] }],
    tags: [{ name: 'orders' }, { name: 'payments' }, { name: 'customers' }, { name: 'users' }],
    paths: {
      '/v1/orders': {
        get: {
          operationId: 'listOrders',
          tags: ['orders'],
          summary: "List the caller's orders",
          description: 'Scope orders:read. Admins see every customer and may filter by customer_id.',
          parameters: [
            ...pageParams('created_at', 'created', { type: 'string', enum: [...ORDER_STATUSES] }),
            queryParam('customer_id', 'Admin only: one customer.', { type: 'string', maxLength: 128 }),
          ],
          responses: {
            '200': jsonResponse('One page of orders.', ref('OrderList'), { ETag: ETAG, Link: LINK }),
            '304': { description: 'Not modified.' },
            '400': problemResponse('ERR_INVALID_PARAMETER', 'ERR_INVALID_CURSOR'),
            '403': problemResponse('ERR_INSUFFICIENT_SCOPE'),
            ...common,
          },
        },
        post: {
          operationId: 'createOrder',
          tags: ['orders'],
          summary: 'Create an order',
          description: 'Scope orders:write. The order starts pending; total is computed.',
          parameters: [idempotencyKey],
          requestBody: { required: true, content: { 'application/json': { schema: ref('OrderInput') } } },
          responses: {
            '201': jsonResponse('Created.', ref('Order'), {
              Location: header('URL of the new order.'),
              ETag: ETAG,
              'Cache-Control': CACHE_CONTROL,
            }),
            '400': problemResponse('ERR_MALFORMED_JSON', 'ERR_INVALID_HEADER'),
            '403': problemResponse('ERR_INSUFFICIENT_SCOPE'),
            '409': problemResponse('ERR_IDEMPOTENCY_IN_FLIGHT'),
            '413': problemResponse('ERR_PAYLOAD_TOO_LARGE'),
            '415': problemResponse('ERR_UNSUPPORTED_MEDIA_TYPE'),
            '422': problemResponse('ERR_VALIDATION', 'ERR_IDEMPOTENCY_KEY_REUSED'),
            ...common,
          },
        },
      },
      '/v1/orders/{id}': {
        parameters: [orderId],
        get: {
          operationId: 'getOrder',
          tags: ['orders'],
          summary: 'Read an order',
          description: "Scope orders:read. Another customer's order answers 404, exactly like a missing one.",
          responses: {
            '200': jsonResponse('The order.', ref('Order'), { ETag: ETAG, 'Cache-Control': CACHE_CONTROL }),
            '304': { description: 'Not modified (If-None-Match).' },
            '404': problemResponse('ERR_NOT_FOUND'),
            '403': problemResponse('ERR_INSUFFICIENT_SCOPE'),
            ...common,
          },
        },
        put: {
          operationId: 'replaceOrder',
          tags: ['orders'],
          summary: "Replace a pending order's items and currency",
          parameters: [ifMatch],
          requestBody: { required: true, content: { 'application/json': { schema: ref('OrderInput') } } },
          responses: {
            '200': jsonResponse('The replaced order.', ref('Order'), { ETag: ETAG }),
            '404': problemResponse('ERR_NOT_FOUND'),
            '409': problemResponse('ERR_ORDER_NOT_PENDING'),
            '412': problemResponse('ERR_PRECONDITION_FAILED'),
            '422': problemResponse('ERR_VALIDATION'),
            ...common,
          },
        },
        patch: {
          operationId: 'patchOrder',
          tags: ['orders'],
          summary: 'Cancel, ship, deliver, or replace the items of an order (JSON merge patch)',
          description:
            'RFC 7396. Customers may cancel a pending order and replace its items while pending; shipped and delivered need the admin scope; paid happens through POST /v1/payments.',
          parameters: [ifMatch],
          requestBody: {
            required: true,
            content: {
              'application/merge-patch+json': { schema: ref('OrderPatch') },
              'application/json': { schema: ref('OrderPatch') },
            },
          },
          responses: {
            '200': jsonResponse('The order after the change.', ref('Order'), { ETag: ETAG }),
            '403': problemResponse('ERR_INSUFFICIENT_SCOPE'),
            '404': problemResponse('ERR_NOT_FOUND'),
            '409': problemResponse('ERR_INVALID_TRANSITION', 'ERR_ORDER_NOT_PENDING'),
            '412': problemResponse('ERR_PRECONDITION_FAILED'),
            '422': problemResponse('ERR_VALIDATION'),
            ...common,
          },
        },
        delete: {
          operationId: 'deleteOrder',
          tags: ['orders'],
          summary: 'Delete a pending or cancelled order',
          parameters: [ifMatch],
          responses: {
            '204': { description: 'Deleted.' },
            '404': problemResponse('ERR_NOT_FOUND'),
            '409': problemResponse('ERR_ORDER_NOT_PENDING'),
            '412': problemResponse('ERR_PRECONDITION_FAILED'),
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
            'Scope payments:write. Moves the order to paid and issues its invoice in one transaction. The amount must equal the order total.',
          parameters: [idempotencyKey],
          requestBody: { required: true, content: { 'application/json': { schema: ref('PaymentInput') } } },
          responses: {
            '201': jsonResponse('Paid.', ref('Payment'), { Location: header('URL of the payment.') }),
            '404': problemResponse('ERR_NOT_FOUND'),
            '409': problemResponse('ERR_ALREADY_PAID', 'ERR_INVALID_TRANSITION', 'ERR_IDEMPOTENCY_IN_FLIGHT'),
            '422': problemResponse('ERR_VALIDATION', 'ERR_AMOUNT_MISMATCH', 'ERR_IDEMPOTENCY_KEY_REUSED'),
            ...common,
          },
        },
      },
      '/v1/payments/{id}': {
        parameters: [pathParam('id', 'Payment id (UUID).', { type: 'string', format: 'uuid' })],
        get: {
          operationId: 'getPayment',
          tags: ['payments'],
          summary: 'Read a payment',
          responses: {
            '200': jsonResponse('The payment.', ref('Payment'), { ETag: ETAG }),
            '404': problemResponse('ERR_NOT_FOUND'),
            ...common,
          },
        },
      },
      '/v1/customers/{customer_id}': {
        parameters: [pathParam('customer_id', "The caller's own customer id (admins: any).")],
        get: {
          operationId: 'getCustomer',
          tags: ['customers'],
          summary: 'Read a customer',
          responses: {
            '200': jsonResponse('The customer.', ref('Customer'), { ETag: ETAG }),
            '404': problemResponse('ERR_NOT_FOUND'),
            ...common,
          },
        },
      },
      '/v1/customers/{customer_id}/invoices': {
        parameters: [pathParam('customer_id', "The caller's own customer id (admins: any).")],
        get: {
          operationId: 'listInvoices',
          tags: ['customers'],
          summary: "List a customer's invoices",
          description: 'Scope invoices:read.',
          parameters: pageParams('issued_at', 'issued', { type: 'string', enum: [...INVOICE_STATUSES] }),
          responses: {
            '200': jsonResponse('One page of invoices.', ref('InvoiceList'), { ETag: ETAG, Link: LINK }),
            '400': problemResponse('ERR_INVALID_PARAMETER', 'ERR_INVALID_CURSOR'),
            '404': problemResponse('ERR_NOT_FOUND'),
            ...common,
          },
        },
      },
      '/v1/users/me': {
        get: {
          operationId: 'getCurrentUser',
          tags: ['users'],
          summary: 'Who the caller is',
          responses: { '200': jsonResponse('The authenticated principal.', ref('User')), ...common },
        },
      },
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (RFC 9068 access token)' },
        apiKey: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'ApiKey <key>' },
      },
      schemas: {
        Order: orderSchema,
        OrderInput: plain(OrderInput),
        OrderPatch: plain(OrderPatch),
        OrderList: plain(ListOf(Order)),
        Payment: plain(Payment),
        PaymentInput: plain(PaymentInput),
        Invoice: plain(Invoice),
        InvoiceList: plain(ListOf(Invoice)),
        Customer: plain(Customer),
        User: plain(User),
        Problem: {
          ...plain(Problem),
          description: `Problem types: ${Object.keys(errorTable)
            .map((c) => problemType(c as ErrorCode))
            .join(', ')}`,
        },
      },
    },
  };
}
