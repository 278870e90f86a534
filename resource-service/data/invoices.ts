/**
 * SQL for invoices: issued by a payment, listed per customer.
 */
import type { Invoice } from '../model/schemas.ts';
import type { Db } from './db.ts';
import { keysetClauses } from './keyset.ts';
import type { KeysetPage } from './keyset.ts';

export interface InvoiceRow {
  id: string;
  customer_id: string;
  order_id: string;
  amount: number;
  currency: string;
  status: Invoice['status'];
  version: number;
  issued_at: Date;
}

/** The invoice of a payment just made: issued already paid. */
export async function insertPaidInvoice(
  db: Db,
  invoice: { orderId: string; customerId: string; paymentId: string; amount: number; currency: string },
): Promise<void> {
  await db`
    insert into invoices (order_id, customer_id, payment_id, amount, currency, status)
    values (${invoice.orderId}, ${invoice.customerId}, ${invoice.paymentId}, ${invoice.amount},
            ${invoice.currency}, 'paid')`;
}

export interface InvoiceListQuery extends KeysetPage {
  customerId: string;
  status?: Invoice['status'];
  issuedAfter?: Date;
  issuedBefore?: Date;
}

/** One page plus one row of a customer's invoices, so the caller knows whether a next page exists. */
export async function listInvoices(db: Db, q: InvoiceListQuery): Promise<InvoiceRow[]> {
  const page = keysetClauses(db, { at: 'issued_at', id: 'id' }, q);
  return db<InvoiceRow[]>`
    select id, customer_id, order_id, amount, currency, status, version, issued_at
    from invoices
    where customer_id = ${q.customerId}
      ${q.status === undefined ? db`` : db`and status = ${q.status}`}
      ${q.issuedAfter === undefined ? db`` : db`and issued_at > ${q.issuedAfter}`}
      ${q.issuedBefore === undefined ? db`` : db`and issued_at < ${q.issuedBefore}`}
      ${page.seek}
    order by ${page.order}
    limit ${page.limit}`;
}
