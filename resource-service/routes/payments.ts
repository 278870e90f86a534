/**
 * /v1/payments: paying a pending order moves it to paid and issues its invoice, all in one
 * transaction, exactly once per order (a unique constraint backs the check). The route table
 * at the end declares each route once, with its OpenAPI description.
 */
import type { ServerResponse } from 'node:http';
import { CACHE_INVALIDATES, formatInvalidates } from '../../shared/cache-headers.ts';
import { runIdempotent } from '../data/idempotency.ts';
import { insertPaidInvoice } from '../data/invoices.ts';
import { findOrder, updateOrder } from '../data/orders.ts';
import { findPayment, insertPayment } from '../data/payments.ts';
import { assertPayable } from '../domain/payments.ts';
import { readJsonBody } from '../http/body.ts';
import { idempotencyKeyOf, requestFingerprint, sendIdempotentResult } from '../http/idempotency.ts';
import { requireScope } from '../http/identity.ts';
import { parseQuery } from '../http/query.ts';
import type { ServiceRequest } from '../http/request.ts';
import { sendRepresentation } from '../http/respond.ts';
import {
  badRequest,
  common,
  headerRef,
  json,
  location,
  parameterRef,
  problem,
  READ_HEADERS,
  ref,
  responseRef,
  unsupportedMediaType,
  WRITE_HEADERS,
} from '../openapi/components.ts';
import { PaymentInput } from '../model/schemas.ts';
import { createValidator } from '../model/validate.ts';
import { notFound, ownerScope, uuidParam } from './context.ts';
import type { RouteContext } from './context.ts';
import { PAYMENT_ETAG, toPayment } from './representations.ts';
import type { OperationDoc, Resource } from './route.ts';

const validatePayment = createValidator(PaymentInput, [
  'id',
  'customer_id',
  'invoice_id',
  'currency',
  'created_at',
]);

async function createPayment(req: ServiceRequest, res: ServerResponse, ctx: RouteContext): Promise<void> {
  requireScope(req.principal, 'payments:write');
  const key = idempotencyKeyOf(req);
  const body = await readJsonBody(req, { maxBytes: ctx.maxBodyBytes, mediaTypes: ['application/json'] });
  const input = validatePayment(body);
  const customerId = req.principal.customerId;

  const result = await runIdempotent(
    ctx.sql,
    { customerId, key, fingerprint: requestFingerprint('POST', req.path, body) },
    async (tx) => {
      // Customers pay their own orders only, admins included: paying is not a support task.
      const order = await findOrder(tx, input.order_id, { customerId }, { forUpdate: true });
      if (order === undefined) throw notFound('order');
      assertPayable(order, input.amount);
      const paymentId = await insertPayment(tx, {
        id: order.id,
        customerId,
        total: order.total,
        currency: order.currency,
      });
      await insertPaidInvoice(tx, {
        orderId: order.id,
        customerId,
        paymentId,
        amount: order.total,
        currency: order.currency,
      });
      await updateOrder(tx, order.id, { status: 'paid' });
      const row = await findPayment(tx, paymentId, { customerId });
      if (row === undefined) throw new Error('inserted payment not found');
      return {
        status: 201,
        headers: {
          Location: `/v1/payments/${row.id}`,
          // Paying changed the order and the customer's invoices, not only /v1/payments.
          [CACHE_INVALIDATES]: formatInvalidates([
            `/v1/orders/${order.id}`,
            '/v1/orders',
            `/v1/customers/${encodeURIComponent(customerId)}/invoices`,
          ]),
        },
        body: toPayment(row),
      };
    },
  );
  sendIdempotentResult(res, result);
}

async function getPayment(req: ServiceRequest, res: ServerResponse, ctx: RouteContext): Promise<void> {
  requireScope(req.principal, 'orders:read');
  parseQuery(req.search ?? '', {});
  const id = uuidParam(req.params['id'], 'payment');
  const row = await findPayment(ctx.sql, id, ownerScope(req.principal));
  if (row === undefined) throw notFound('payment');
  sendRepresentation(req, res, { etag: PAYMENT_ETAG, body: toPayment(row) });
}

// ---- OpenAPI descriptions ----------------------------------------------------------------

const createPaymentDoc: OperationDoc = {
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
};

const getPaymentDoc: OperationDoc = {
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
};

export const PAYMENT_ROUTES: readonly Resource[] = [
  {
    path: '/v1/payments',
    operations: [{ method: 'POST', handle: createPayment, doc: createPaymentDoc }],
  },
  {
    path: '/v1/payments/{id}',
    parameters: [parameterRef('PaymentId')],
    operations: [{ method: 'GET', handle: getPayment, doc: getPaymentDoc }],
  },
];
