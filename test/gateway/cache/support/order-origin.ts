/**
 * An origin that behaves like the resource service for orders: per-customer data with
 * `Cache-Control: private, no-cache` and `Portico-Cache-Control: max-age=30`, strong ETags,
 * 304 on If-None-Match, 404 for another customer's order, 403 without the read scope,
 * `Portico-Invalidates` on writes.
 */
import type { Clock } from './cache-gateway.ts';
import { startOrigin, type OriginRequest, type OriginReply, type TestOrigin } from './origin.ts';

export interface Order {
  id: string;
  customer: string;
  status: string;
  version: number;
}

export interface OrderOrigin extends TestOrigin {
  orders: Map<string, Order>;
  /** When set, GETs wait for it before answering (a read held in flight). */
  gate?: Promise<void> | undefined;
}

const PER_CUSTOMER = { 'cache-control': 'private, no-cache', 'portico-cache-control': 'max-age=30' };
const NO_STORE = { 'cache-control': 'no-store' };

export const etagOf = (order: Order) => `"o${order.id}.${order.version}"`;

export async function startOrderOrigin(clock: Clock, orders: Order[]): Promise<OrderOrigin> {
  const state = new Map(orders.map((o) => [o.id, { ...o }]));
  const origin = (await startOrigin(() => ({}))) as OrderOrigin;
  origin.orders = state;
  origin.setHandler(async (request) => {
    // The answer reflects the state when the request arrived, however long it is held.
    const reply = handle(request);
    if (request.method === 'GET' && origin.gate !== undefined) await origin.gate;
    return reply;
  });

  function handle(request: OriginRequest): OriginReply {
    const date = clock.date();
    const problem = (status: number) => ({
      status,
      headers: { date, ...NO_STORE },
      body: `{"status":${status}}`,
    });
    const match = /^\/v1\/orders\/([^/]+)$/.exec(request.path);
    if (request.path === '/v1/orders' && request.method === 'GET') {
      const mine = [...state.values()].filter((o) => o.customer === request.customer);
      return { headers: { date, ...PER_CUSTOMER }, body: JSON.stringify(mine) };
    }
    if (match === null) return problem(404);
    const order = state.get(match[1] ?? '');
    if (!request.scopes?.includes('orders:read') && request.method === 'GET') return problem(403);
    if (order === undefined || order.customer !== request.customer) return problem(404);
    if (request.method === 'GET' || request.method === 'HEAD') {
      const etag = etagOf(order);
      if (request.headers['if-none-match'] === etag)
        return { status: 304, headers: { date, etag, ...PER_CUSTOMER } };
      return {
        headers: { date, etag, ...PER_CUSTOMER, 'content-type': 'application/json' },
        body: JSON.stringify(order),
      };
    }
    if (request.method === 'PATCH') {
      if (request.headers['if-match'] !== undefined && request.headers['if-match'] !== etagOf(order))
        return problem(412);
      if (order.status === 'cancelled') return problem(409);
      order.status = 'cancelled';
      order.version++;
      return {
        headers: { date, etag: etagOf(order), ...NO_STORE, 'portico-invalidates': '</v1/orders>' },
        body: JSON.stringify(order),
      };
    }
    return problem(405);
  }
  return origin;
}
