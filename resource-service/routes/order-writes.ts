/**
 * Two rules of order writes that the routes apply: what items an order may hold, and what a
 * replay of its creation answers (docs/security.md says why each is as it is).
 */
import { HttpProblem, validationProblem } from '../../shared/errors.ts';
import type { IdempotentResult } from '../data/idempotency.ts';
import * as orders from '../data/orders.ts';
import type { ServiceRequest } from '../http/request.ts';
import { ownerScope } from './context.ts';
import type { RouteContext } from './context.ts';
import { orderEtag, toOrder } from './representations.ts';

/**
 * Items whose total is 0 make an order that can never be paid (a payment is at least 1 minor
 * unit), so never shipped: refused wherever items are set. A free item beside priced ones is fine.
 */
export function withPayableItems<T extends { items?: readonly { quantity: number; unit_price: number }[] }>(
  input: T,
): T {
  const items = input.items;
  if (items !== undefined && items.every((item) => item.unit_price === 0)) {
    throw validationProblem([
      {
        pointer: '#/items',
        detail: 'the order total must be above 0: an order of free items cannot be paid',
      },
    ]);
  }
  return input;
}

/**
 * A replay repeats the outcome of the first request (201, the order's Location) with the order
 * as it is now: the stored body and ETag describe a state that may be gone (cancelled, items
 * replaced), and a client would act on them (If-Match) or a cache store them. An order deleted
 * since is a 404 saying so, still marked as a replay: the order was created, and is no more.
 */
export async function asItIsNow(
  ctx: RouteContext,
  req: ServiceRequest,
  result: IdempotentResult,
): Promise<IdempotentResult> {
  const id = (result.response.body as { id?: unknown }).id;
  if (typeof id !== 'string') return result;
  const row = await orders.findOrder(ctx.sql, id, ownerScope(req.principal));
  if (row === undefined) {
    throw new HttpProblem('ERR_NOT_FOUND', 'The order this Idempotency-Key created has been deleted since', {
      headers: { 'Idempotent-Replayed': 'true' },
    });
  }
  const headers = { ...result.response.headers, ETag: orderEtag(row) };
  return { replayed: true, response: { ...result.response, headers, body: toOrder(row) } };
}
