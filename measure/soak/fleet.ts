/**
 * The soak's customers and what the soak knows of their orders. Each order is changed by one
 * request at a time (`busy`), and its status and total are updated only from the answer of a
 * change that succeeded, so what the soak knows is what the service must say: a read that
 * disagrees is a stale read, a payment of a pending order that is refused is a lost update.
 */
import { loadOrCreateDevIssuer } from '../../gateway/identity/dev-issuer.ts';

export const SCOPES = 'orders:read orders:write payments:write invoices:read';

export type OrderStatus = 'pending' | 'paid' | 'cancelled';

export interface KnownOrder {
  id: string;
  status: OrderStatus;
  total: number;
  etag: string;
  /** Bumped by every successful change: a read that saw another version checks nothing. */
  version: number;
  busy: boolean;
  /** Stable orders are never changed: If-None-Match with their ETag must get 304. */
  stable: boolean;
}

export interface Customer {
  id: string;
  bearer: string;
  orders: KnownOrder[];
}

/** Orders remembered per customer: the pool stays bounded however long the run. */
const MAX_KNOWN_ORDERS = 100;

export function pick<T>(items: readonly T[]): T | undefined {
  return items[Math.floor(Math.random() * items.length)];
}

/** An order of `customer` that no request is changing, in one of `statuses`. */
export function idleOrder(customer: Customer, statuses: readonly OrderStatus[]): KnownOrder | undefined {
  return pick(customer.orders.filter((o) => !o.stable && !o.busy && statuses.includes(o.status)));
}

/** Remembers a new order; forgets the oldest changeable one not in use when the pool is full. */
export function remember(customer: Customer, order: KnownOrder): void {
  customer.orders.push(order);
  if (customer.orders.length <= MAX_KNOWN_ORDERS) return;
  const oldest = customer.orders.findIndex((o) => !o.stable && !o.busy);
  if (oldest >= 0) customer.orders.splice(oldest, 1);
}

/** Forgets an order whose state is no longer known (a change got an unexpected answer). */
export function forget(customer: Customer, order: KnownOrder): void {
  const index = customer.orders.indexOf(order);
  if (index >= 0) customer.orders.splice(index, 1);
}

/** Tokens of the run's development issuer, valid for the whole run and its drain. */
export async function mintCustomers(
  dataDir: string,
  ids: readonly string[],
  ttlSeconds: number,
): Promise<Customer[]> {
  const issuer = loadOrCreateDevIssuer(dataDir);
  return Promise.all(
    ids.map(async (id) => {
      const token = await issuer.sign(
        { sub: `${id}-user`, client_id: 'soak', customer_id: id, scope: SCOPES },
        ttlSeconds,
      );
      return { id, bearer: `Bearer ${token}`, orders: [] };
    }),
  );
}

/**
 * Credentials the gateway must refuse with 401: malformed, signed by another issuer's key (a
 * second development issuer in a directory of its own), expired, and a forged API key.
 */
export async function badCredentials(strangerDir: string, dataDir: string): Promise<string[]> {
  const claims = { sub: 'intruder', client_id: 'soak', customer_id: 'soak-c01', scope: SCOPES };
  const stranger = await loadOrCreateDevIssuer(strangerDir).sign(claims, 3600);
  const expired = await loadOrCreateDevIssuer(dataDir).sign(claims, -3600);
  return [
    'Bearer not.a.token',
    `Bearer ${stranger}`,
    `Bearer ${expired}`,
    'ApiKey pk_soak_forged.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA',
  ];
}
