/**
 * SQL for orders and their items. Every read takes an owner scope: one customer's rows or, for
 * admins, all rows.
 */
import type { Order, OrderInput, OrderStatus } from '../model/schemas.ts';
import type { Db, OwnerScope } from './db.ts';
import { keysetClauses } from './keyset.ts';
import type { KeysetPage } from './keyset.ts';

export interface OrderRow {
  id: string;
  customer_id: string;
  status: OrderStatus;
  currency: string;
  version: number;
  created_at: Date;
  updated_at: Date;
  items: Order['items'];
  total: number;
}

function scoped(db: Db, scope: OwnerScope) {
  return scope === 'all-customers' ? db`` : db`and o.customer_id = ${scope.customerId}`;
}

function selectOrders(db: Db) {
  return db`
    select o.id, o.customer_id, o.status, o.currency, o.version, o.created_at, o.updated_at,
           coalesce(i.items, '[]'::json) as items, coalesce(i.total, 0)::bigint as total
    from orders o
    left join lateral (
      select json_agg(json_build_object('sku', sku, 'quantity', quantity, 'unit_price', unit_price)
                      order by position) as items,
             sum(quantity::bigint * unit_price) as total
      from order_items where order_id = o.id
    ) i on true`;
}

export async function findOrder(
  db: Db,
  id: string,
  scope: OwnerScope,
  options: { forUpdate?: boolean } = {},
): Promise<OrderRow | undefined> {
  // Lock the order row alone: the lateral aggregate cannot be locked, and need not be.
  if (options.forUpdate === true) {
    const locked = await db`select 1 from orders o where o.id = ${id} ${scoped(db, scope)} for update`;
    if (locked.length === 0) return undefined;
  }
  const [row] = await db<OrderRow[]>`${selectOrders(db)} where o.id = ${id} ${scoped(db, scope)}`;
  return row;
}

export interface OrderListQuery extends KeysetPage {
  scope: OwnerScope;
  status?: OrderStatus;
  createdAfter?: Date;
  createdBefore?: Date;
  customerId?: string;
}

/** One page plus one row, so the caller knows whether a next page exists. */
export async function listOrders(db: Db, q: OrderListQuery): Promise<OrderRow[]> {
  const page = keysetClauses(db, { at: 'o.created_at', id: 'o.id' }, q);
  return db<OrderRow[]>`
    ${selectOrders(db)}
    where true ${scoped(db, q.scope)}
      ${q.customerId === undefined ? db`` : db`and o.customer_id = ${q.customerId}`}
      ${q.status === undefined ? db`` : db`and o.status = ${q.status}`}
      ${q.createdAfter === undefined ? db`` : db`and o.created_at > ${q.createdAfter}`}
      ${q.createdBefore === undefined ? db`` : db`and o.created_at < ${q.createdBefore}`}
      ${page.seek}
    order by ${page.order}
    limit ${page.limit}`;
}

async function insertItems(db: Db, orderId: string, items: OrderInput['items']): Promise<void> {
  await db`insert into order_items ${db(
    items.map((item, position) => ({ order_id: orderId, position, ...item })),
    'order_id',
    'position',
    'sku',
    'quantity',
    'unit_price',
  )}`;
}

export async function insertOrder(db: Db, customerId: string, input: OrderInput): Promise<OrderRow> {
  const [created] = await db<{ id: string }[]>`
    insert into orders (customer_id, currency) values (${customerId}, ${input.currency}) returning id`;
  if (created === undefined) throw new Error('insert into orders returned no row');
  await insertItems(db, created.id, input.items);
  const row = await findOrder(db, created.id, { customerId });
  if (row === undefined) throw new Error('inserted order not found');
  return row;
}

/** Applies a change and bumps the version; returns the new state. */
export async function updateOrder(
  db: Db,
  id: string,
  change: { status?: OrderStatus; items?: OrderInput['items']; currency?: string },
): Promise<OrderRow> {
  if (change.items !== undefined) {
    await db`delete from order_items where order_id = ${id}`;
    await insertItems(db, id, change.items);
  }
  await db`
    update orders set
      status = coalesce(${change.status ?? null}, status),
      currency = coalesce(${change.currency ?? null}, currency),
      version = version + 1,
      updated_at = now()
    where id = ${id}`;
  const row = await findOrder(db, id, 'all-customers');
  if (row === undefined) throw new Error('updated order not found');
  return row;
}

export async function deleteOrder(db: Db, id: string): Promise<void> {
  await db`delete from orders where id = ${id}`;
}
