/**
 * Demo data for the zero-configuration start: two customers with orders in several states and
 * the invoices of the paid ones. It is created through the service's own HTTP API (signed
 * assertions, the same validation and transactions as real traffic), once: a data dir that
 * already holds the demo customers is left as it is.
 */
import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { IDENTITY_HEADER, signAssertion } from '../shared/identity-assertion.ts';
import type { AssertionKey } from '../shared/identity-assertion.ts';
import type { Principal } from '../shared/principal.ts';

export const DEMO_CUSTOMERS = ['demo-alice', 'demo-bob'] as const;

const CUSTOMER_SCOPES = ['orders:read', 'orders:write', 'payments:write', 'invoices:read'];

interface DemoOrder {
  items: { sku: string; quantity: number; unit_price: number }[];
  currency: string;
  /** Where the order should end up. */
  state: 'pending' | 'paid' | 'shipped' | 'delivered' | 'cancelled';
}

const PLAN: Record<(typeof DEMO_CUSTOMERS)[number], DemoOrder[]> = {
  'demo-alice': [
    { items: [{ sku: 'SKU-1', quantity: 2, unit_price: 1250 }], currency: 'EUR', state: 'pending' },
    { items: [{ sku: 'BOOK-42', quantity: 1, unit_price: 2999 }], currency: 'EUR', state: 'paid' },
    {
      items: [
        { sku: 'MUG-7', quantity: 4, unit_price: 899 },
        { sku: 'TEA-1', quantity: 2, unit_price: 650 },
      ],
      currency: 'EUR',
      state: 'shipped',
    },
    { items: [{ sku: 'LAMP-3', quantity: 1, unit_price: 4500 }], currency: 'EUR', state: 'cancelled' },
  ],
  'demo-bob': [
    { items: [{ sku: 'PEN-9', quantity: 10, unit_price: 199 }], currency: 'USD', state: 'delivered' },
    { items: [{ sku: 'DESK-1', quantity: 1, unit_price: 24900 }], currency: 'USD', state: 'pending' },
  ],
};

export async function hasDemoData(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from customers where id in ${sql([...DEMO_CUSTOMERS])}`;
  return (row?.n ?? 0) > 0;
}

/** Creates the demo data through the service at `serviceUrl`; returns the orders made. */
export async function seedDemoData(serviceUrl: string, key: AssertionKey): Promise<number> {
  const call = async (principal: Principal, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${serviceUrl}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        [IDENTITY_HEADER]: signAssertion(key, principal, { method, target: path, requestId: randomUUID() }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await response.json()) as Record<string, unknown>;
    if (!response.ok)
      throw new Error(`demo data: ${method} ${path} answered ${response.status}: ${String(json['detail'])}`);
    return json;
  };
  const admin: Principal = {
    subject: 'demo-admin',
    customerId: 'demo-ops',
    scopes: ['admin'],
    authMethod: 'jwt',
  };
  let created = 0;
  for (const [customerId, orders] of Object.entries(PLAN)) {
    const customer: Principal = {
      subject: `${customerId}-user`,
      customerId,
      scopes: CUSTOMER_SCOPES,
      authMethod: 'jwt',
    };
    for (const plan of orders) {
      const order = await call(customer, 'POST', '/v1/orders', {
        items: plan.items,
        currency: plan.currency,
      });
      created++;
      const path = `/v1/orders/${String(order['id'])}`;
      if (plan.state === 'cancelled') await call(customer, 'PATCH', path, { status: 'cancelled' });
      if (plan.state === 'pending' || plan.state === 'cancelled') continue;
      await call(customer, 'POST', '/v1/payments', { order_id: order['id'], amount: order['total'] });
      if (plan.state === 'paid') continue;
      await call(admin, 'PATCH', path, { status: 'shipped' });
      if (plan.state === 'delivered') await call(admin, 'PATCH', path, { status: 'delivered' });
    }
  }
  return created;
}
