/**
 * When an order may be paid: while pending, for exactly its total. A cancelled order is a
 * transition the state machine refuses; any other state means it was paid already.
 */
import type { OrderStatus } from '../model/schemas.ts';
import { DomainError } from './errors.ts';

export function assertPayable(
  order: { status: OrderStatus; total: number; currency: string },
  amount: number,
): void {
  if (order.status === 'cancelled') {
    throw new DomainError('invalid-transition', 'A cancelled order cannot be paid', {
      from: 'cancelled',
      to: 'paid',
    });
  }
  if (order.status !== 'pending') throw new DomainError('already-paid', 'This order is already paid', {});
  if (amount !== order.total) {
    throw new DomainError('amount-mismatch', `The order total is ${order.total} ${order.currency}`, {
      total: order.total,
      currency: order.currency,
    });
  }
}
