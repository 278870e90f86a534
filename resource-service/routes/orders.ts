/**
 * /v1/orders: create (idempotent), read, list, replace, patch (RFC 7396), delete. Each
 * handler reads the request, asks the order rules (domain/orders.ts) and the data module,
 * and answers; the route table at the end declares each once, with its OpenAPI description.
 */
import type { ServerResponse } from 'node:http';
import { CACHE_INVALIDATES, formatInvalidates } from '../../shared/cache-headers.ts';
import { CUSTOMER_ID_PATTERN, isAdmin } from '../../shared/principal.ts';
import type { Db } from '../data/db.ts';
import { runIdempotent } from '../data/idempotency.ts';
import * as orders from '../data/orders.ts';
import type { OrderRow } from '../data/orders.ts';
import {
  assertDeletable,
  assertItemsChangeable,
  assertReplaceable,
  checkPatchTransition,
} from '../domain/orders.ts';
import { readJsonBody } from '../http/body.ts';
import { assertWritePreconditions } from '../http/conditional.ts';
import { idempotencyKeyOf, requestFingerprint, sendIdempotentResult } from '../http/idempotency.ts';
import { insufficientScope, requireScope } from '../http/identity.ts';
import { integerBetween, oneOf, parseQuery, text, timestamp } from '../http/query.ts';
import type { ServiceRequest } from '../http/request.ts';
import { NO_STORE, sendJson, sendRepresentation } from '../http/respond.ts';
import {
  badRequest,
  common,
  headerRef,
  json,
  listParameters,
  location,
  parameterRef,
  problem,
  query,
  READ_HEADERS,
  ref,
  responseRef,
  unsupportedMediaType,
  WRITE_HEADERS,
} from '../openapi/components.ts';
import { ORDER_READ_ONLY_FIELDS, ORDER_STATUSES, OrderInput, OrderPatch } from '../model/schemas.ts';
import { createValidator } from '../model/validate.ts';
import { notFound, ownerScope, uuidParam } from './context.ts';
import type { RouteContext } from './context.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../model/limits.ts';
import { cursorBinding, sendPage } from './list.ts';
import { asItIsNow, withPayableItems } from './order-writes.ts';
import { orderEtag, toOrder } from './representations.ts';
import type { OperationDoc, Resource } from './route.ts';

const JSON_TYPES = ['application/json'] as const;
const PATCH_TYPES = ['application/merge-patch+json', 'application/json'] as const;

/** POST and PUT take the same body: the fields a client may set, status excluded. */
const validateInputShape = createValidator(OrderInput, [...ORDER_READ_ONLY_FIELDS, 'status']);
const validatePatchShape = createValidator(OrderPatch, [...ORDER_READ_ONLY_FIELDS]);
const validateOrderInput = (body: unknown) => withPayableItems(validateInputShape(body));
const validatePatch = (body: unknown) => withPayableItems(validatePatchShape(body));

const listParametersSpec = {
  limit: integerBetween(1, MAX_PAGE_SIZE),
  cursor: text(/^[\w.-]{1,512}$/, 'must be a next_cursor value from a previous page'),
  sort: oneOf(['created_at', '-created_at'] as const),
  status: oneOf(ORDER_STATUSES),
  created_after: timestamp,
  created_before: timestamp,
  customer_id: text(new RegExp(CUSTOMER_ID_PATTERN), 'must be a customer id'),
};

/** Any write to an order: the gateway drops the order and every list of orders. */
const INVALIDATES_ORDERS = { [CACHE_INVALIDATES]: formatInvalidates(['/v1/orders']) };

function orderWritten(row: OrderRow) {
  return {
    status: 200,
    body: toOrder(row),
    headers: { ETag: orderEtag(row), ...INVALIDATES_ORDERS },
    cache: NO_STORE,
  };
}

/**
 * The order `id` names, locked for the rest of the transaction, when the caller may see it and
 * its ETag meets If-Match and If-None-Match; else 404 or 412.
 */
async function lockedOrder(tx: Db, req: ServiceRequest, id: string): Promise<OrderRow> {
  const current = await orders.findOrder(tx, id, ownerScope(req.principal), { forUpdate: true });
  if (current === undefined) throw notFound('order');
  assertWritePreconditions(req, orderEtag(current));
  return current;
}

async function listOrders(req: ServiceRequest, res: ServerResponse, ctx: RouteContext): Promise<void> {
  requireScope(req.principal, 'orders:read');
  const q = parseQuery(req.search ?? '', listParametersSpec);
  if (q.customer_id !== undefined && !isAdmin(req.principal)) {
    throw insufficientScope('admin', 'Filtering by customer_id needs the admin scope');
  }
  const binding = cursorBinding(req, req.principal);
  const limit = q.limit ?? DEFAULT_PAGE_SIZE;
  const rows = await orders.listOrders(ctx.sql, {
    scope: ownerScope(req.principal),
    limit,
    descending: (q.sort ?? '-created_at') === '-created_at',
    ...(q.cursor === undefined ? {} : { after: ctx.cursors.decode(q.cursor, binding) }),
    ...(q.status === undefined ? {} : { status: q.status }),
    ...(q.created_after === undefined ? {} : { createdAfter: q.created_after }),
    ...(q.created_before === undefined ? {} : { createdBefore: q.created_before }),
    ...(q.customer_id === undefined ? {} : { customerId: q.customer_id }),
  });
  sendPage(req, res, {
    rows,
    limit,
    toItem: toOrder,
    position: (row) => ({ at: row.created_at.toISOString(), id: row.id }),
    version: (row) => `${row.id}:${row.version}`,
    cursors: ctx.cursors,
    binding,
  });
}

async function createOrder(req: ServiceRequest, res: ServerResponse, ctx: RouteContext): Promise<void> {
  requireScope(req.principal, 'orders:write');
  const key = idempotencyKeyOf(req);
  const body = await readJsonBody(req, { maxBytes: ctx.maxBodyBytes, mediaTypes: JSON_TYPES });
  const input = validateOrderInput(body);
  const customerId = req.principal.customerId;
  const result = await runIdempotent(
    ctx.sql,
    { customerId, key, fingerprint: requestFingerprint('POST', req.path, body) },
    async (tx) => {
      const row = await orders.insertOrder(tx, customerId, input);
      return {
        status: 201,
        headers: { Location: `/v1/orders/${row.id}`, ETag: orderEtag(row), ...INVALIDATES_ORDERS },
        body: toOrder(row),
      };
    },
  );
  sendIdempotentResult(res, result.replayed ? await asItIsNow(ctx, req, result) : result);
}

async function getOrder(req: ServiceRequest, res: ServerResponse, ctx: RouteContext): Promise<void> {
  requireScope(req.principal, 'orders:read');
  parseQuery(req.search ?? '', {});
  const id = uuidParam(req.params['id'], 'order');
  const row = await orders.findOrder(ctx.sql, id, ownerScope(req.principal));
  if (row === undefined) throw notFound('order');
  sendRepresentation(req, res, { etag: orderEtag(row), body: toOrder(row) });
}

async function replaceOrder(req: ServiceRequest, res: ServerResponse, ctx: RouteContext): Promise<void> {
  requireScope(req.principal, 'orders:write');
  const id = uuidParam(req.params['id'], 'order');
  const input = validateOrderInput(
    await readJsonBody(req, { maxBytes: ctx.maxBodyBytes, mediaTypes: JSON_TYPES }),
  );
  const row = await ctx.sql.begin(async (tx) => {
    const current = await lockedOrder(tx, req, id);
    assertReplaceable(current.status);
    return orders.updateOrder(tx, id, { items: input.items, currency: input.currency });
  });
  sendJson(res, orderWritten(row));
}

async function patchOrder(req: ServiceRequest, res: ServerResponse, ctx: RouteContext): Promise<void> {
  requireScope(req.principal, 'orders:write');
  const id = uuidParam(req.params['id'], 'order');
  const patch = validatePatch(
    await readJsonBody(req, { maxBytes: ctx.maxBodyBytes, mediaTypes: PATCH_TYPES }),
  );
  const row = await ctx.sql.begin(async (tx) => {
    const current = await lockedOrder(tx, req, id);
    if (patch.items !== undefined) assertItemsChangeable(current.status);
    const statusChanges =
      patch.status !== undefined &&
      checkPatchTransition(current.status, patch.status, isAdmin(req.principal));
    if (!statusChanges && patch.items === undefined) return current;
    return orders.updateOrder(tx, id, {
      ...(statusChanges ? { status: patch.status } : {}),
      ...(patch.items === undefined ? {} : { items: patch.items }),
    });
  });
  sendJson(res, orderWritten(row));
}

async function deleteOrder(req: ServiceRequest, res: ServerResponse, ctx: RouteContext): Promise<void> {
  requireScope(req.principal, 'orders:write');
  const id = uuidParam(req.params['id'], 'order');
  await ctx.sql.begin(async (tx) => {
    const current = await lockedOrder(tx, req, id);
    assertDeletable(current.status);
    await orders.deleteOrder(tx, id);
  });
  sendJson(res, { status: 204, headers: INVALIDATES_ORDERS, cache: NO_STORE });
}

// ---- OpenAPI descriptions ----------------------------------------------------------------

const listOrdersDoc: OperationDoc = {
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
};

const createOrderDoc: OperationDoc = {
  operationId: 'createOrder',
  tags: ['orders'],
  summary: 'Create an order',
  description:
    'Scope `orders:write`. The order starts `pending`; its total is computed. Send an Idempotency-Key to retry safely: a retry answers 201 with the order as it is now, or 404 if it was deleted since.',
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
    '404': responseRef('NotFound'),
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
};

const getOrderDoc: OperationDoc = {
  operationId: 'getOrder',
  tags: ['orders'],
  summary: 'Read an order',
  description: "Scope `orders:read`. Another customer's order answers 404, exactly like a missing one.",
  parameters: [parameterRef('IfNoneMatch'), parameterRef('IfMatch')],
  responses: {
    '200': json('The order.', ref('Order'), { ETag: headerRef('ETag'), ...READ_HEADERS }),
    '304': responseRef('NotModified'),
    '400': badRequest(),
    '403': responseRef('Forbidden'),
    '404': responseRef('NotFound'),
    '412': responseRef('PreconditionFailed'),
    ...common,
  },
};

const replaceOrderDoc: OperationDoc = {
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
};

const patchOrderDoc: OperationDoc = {
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
};

const deleteOrderDoc: OperationDoc = {
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
};

export const ORDER_ROUTES: readonly Resource[] = [
  {
    path: '/v1/orders',
    operations: [
      { method: 'GET', handle: listOrders, doc: listOrdersDoc },
      { method: 'POST', handle: createOrder, doc: createOrderDoc },
    ],
  },
  {
    path: '/v1/orders/{id}',
    parameters: [parameterRef('OrderId')],
    operations: [
      { method: 'GET', handle: getOrder, doc: getOrderDoc },
      { method: 'PUT', handle: replaceOrder, doc: replaceOrderDoc },
      { method: 'PATCH', handle: patchOrder, doc: patchOrderDoc },
      { method: 'DELETE', handle: deleteOrder, doc: deleteOrderDoc },
    ],
  },
];
