/**
 * SQL for payments. A payment is read together with the invoice it issued; it never changes
 * once made.
 */
import type { Db, OwnerScope } from './db.ts';

export interface PaymentRow {
  id: string;
  order_id: string;
  customer_id: string;
  invoice_id: string;
  amount: number;
  currency: string;
  created_at: Date;
}

export async function findPayment(db: Db, id: string, scope: OwnerScope): Promise<PaymentRow | undefined> {
  const [row] = await db<PaymentRow[]>`
    select p.id, p.order_id, p.customer_id, i.id as invoice_id, p.amount, p.currency, p.created_at
    from payments p join invoices i on i.payment_id = p.id
    where p.id = ${id} ${scope === 'all-customers' ? db`` : db`and p.customer_id = ${scope.customerId}`}`;
  return row;
}

/** Records the payment of `order`'s whole total; returns the payment's id. */
export async function insertPayment(
  db: Db,
  order: { id: string; customerId: string; total: number; currency: string },
): Promise<string> {
  const [payment] = await db<{ id: string }[]>`
    insert into payments (order_id, customer_id, amount, currency)
    values (${order.id}, ${order.customerId}, ${order.total}, ${order.currency}) returning id`;
  if (payment === undefined) throw new Error('insert into payments returned no row');
  return payment.id;
}
