/**
 * How stored rows look to clients: the JSON bodies and the strong ETags of each resource.
 * Each tag carries a representation version, so that a change of the body's shape changes
 * every tag even when no row changed.
 */
import type { CustomerRow } from '../data/customers.ts';
import type { InvoiceRow } from '../data/invoices.ts';
import type { OrderRow } from '../data/orders.ts';
import type { PaymentRow } from '../data/payments.ts';
import type { Customer, Invoice, Order, Payment } from '../model/schemas.ts';

const ORDER_REPRESENTATION = 1;

/** Strong ETag from the row version (and the representation's own version). */
export function orderEtag(row: Pick<OrderRow, 'version'>): string {
  return `"o${ORDER_REPRESENTATION}.${row.version}"`;
}

export function toOrder(row: OrderRow): Order {
  return {
    id: row.id,
    customer_id: row.customer_id,
    status: row.status,
    items: row.items,
    currency: row.currency,
    total: row.total,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** Payments never change once made: a constant tag per representation version suffices. */
export const PAYMENT_ETAG = '"p1"';

export function toPayment(row: PaymentRow): Payment {
  return { ...row, created_at: row.created_at.toISOString() };
}

export function customerEtag(row: Pick<CustomerRow, 'version'>): string {
  return `"c1.${row.version}"`;
}

export function toCustomer(row: CustomerRow): Customer {
  return { id: row.id, created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString() };
}

export function toInvoice(row: InvoiceRow): Invoice {
  return {
    id: row.id,
    customer_id: row.customer_id,
    order_id: row.order_id,
    amount: row.amount,
    currency: row.currency,
    status: row.status,
    issued_at: row.issued_at.toISOString(),
  };
}
