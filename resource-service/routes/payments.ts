/**
 * /v1/payments: paying a pending order moves it to paid and issues its invoice, all in one
 * transaction, exactly once per order (a unique constraint backs the check).
 */
import type { Polka } from 'polka';
import { CACHE_INVALIDATES, formatInvalidates } from '../../shared/cache-headers.ts';
import { HttpProblem } from '../../shared/errors.ts';
import type { ServiceRequest } from '../app.ts';
import { readJsonBody } from '../http/body.ts';
import { requireScope } from '../http/identity.ts';
import { PER_CUSTOMER, sendJson, sendNotModified } from '../http/respond.ts';
import { isNotModified } from '../http/conditional.ts';
import { parseQuery } from '../http/query.ts';
import { idempotencyKeyOf, requestFingerprint, runIdempotent, sendIdempotentResult } from '../idempotency.ts';
import { findOrder, updateOrder } from '../orders/repository.ts';
import type { Db } from '../orders/repository.ts';
import { PaymentInput } from '../schemas.ts';
import type { Payment } from '../schemas.ts';
import { createValidator } from '../validate.ts';
import { notFound, ownerScope, uuidParam } from './context.ts';
import type { RouteContext } from './context.ts';
import { methodNotAllowed } from './method-not-allowed.ts';

const validatePayment = createValidator(PaymentInput, [
  'id',
  'customer_id',
  'invoice_id',
  'currency',
  'created_at',
]);

interface PaymentRow {
  id: string;
  order_id: string;
  customer_id: string;
  invoice_id: string;
  amount: number;
  currency: string;
  created_at: Date;
}

function toPayment(row: PaymentRow): Payment {
  return { ...row, created_at: row.created_at.toISOString() };
}

async function findPayment(
  db: Db,
  id: string,
  customerId: string | undefined,
): Promise<PaymentRow | undefined> {
  const [row] = await db<PaymentRow[]>`
    select p.id, p.order_id, p.customer_id, i.id as invoice_id, p.amount, p.currency, p.created_at
    from payments p join invoices i on i.payment_id = p.id
    where p.id = ${id} ${customerId === undefined ? db`` : db`and p.customer_id = ${customerId}`}`;
  return row;
}

export function registerPaymentRoutes(app: Polka<ServiceRequest>, ctx: RouteContext): void {
  const { sql } = ctx;

  app.post('/v1/payments', async (req, res) => {
    requireScope(req.principal, 'payments:write');
    const key = idempotencyKeyOf(req);
    const body = await readJsonBody(req, { maxBytes: ctx.maxBodyBytes, mediaTypes: ['application/json'] });
    const input = validatePayment(body);
    const customerId = req.principal.customerId;

    const result = await runIdempotent(
      sql,
      { customerId, key, fingerprint: requestFingerprint('POST', req.path, body) },
      async (tx) => {
        // Customers pay their own orders only, admins included: paying is not a support task.
        const order = await findOrder(tx, input.order_id, { customerId }, { forUpdate: true });
        if (order === undefined) throw notFound('order');
        if (order.status === 'cancelled') {
          throw new HttpProblem('ERR_INVALID_TRANSITION', 'A cancelled order cannot be paid', {
            extensions: { from: 'cancelled', to: 'paid' },
          });
        }
        if (order.status !== 'pending')
          throw new HttpProblem('ERR_ALREADY_PAID', 'This order is already paid');
        if (input.amount !== order.total) {
          throw new HttpProblem(
            'ERR_AMOUNT_MISMATCH',
            `The order total is ${order.total} ${order.currency}`,
            {
              extensions: {
                errors: [{ pointer: '#/amount', detail: `must equal the order total, ${order.total}` }],
              },
            },
          );
        }
        const [payment] = await tx<{ id: string }[]>`
          insert into payments (order_id, customer_id, amount, currency)
          values (${order.id}, ${customerId}, ${order.total}, ${order.currency}) returning id`;
        if (payment === undefined) throw new Error('insert into payments returned no row');
        await tx`
          insert into invoices (order_id, customer_id, payment_id, amount, currency, status)
          values (${order.id}, ${customerId}, ${payment.id}, ${order.total}, ${order.currency}, 'paid')`;
        await updateOrder(tx, order.id, { status: 'paid' });
        const row = await findPayment(tx, payment.id, customerId);
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
  });

  app.get('/v1/payments/:id', async (req, res) => {
    requireScope(req.principal, 'orders:read');
    parseQuery(req.search ?? '', {});
    const id = uuidParam(req.params['id'], 'payment');
    const scope = ownerScope(req.principal);
    const row = await findPayment(sql, id, scope === 'all-customers' ? undefined : scope.customerId);
    if (row === undefined) throw notFound('payment');
    // Payments never change once made: a constant tag per representation version suffices.
    const etag = '"p1"';
    if (isNotModified(req, etag)) {
      sendNotModified(res, etag, PER_CUSTOMER);
      return;
    }
    sendJson(res, { status: 200, body: toPayment(row), headers: { ETag: etag }, cache: PER_CUSTOMER });
  });

  methodNotAllowed(app, '/v1/payments', ['POST']);
  methodNotAllowed(app, '/v1/payments/:id', ['GET', 'HEAD']);
}
