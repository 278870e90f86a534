/**
 * The order state machine (DESIGN.md section 3):
 *   pending → paid → shipped → delivered,  pending → cancelled.
 * Who may drive which step through PATCH is decided here too; paying happens only through
 * POST /v1/payments, so that money and status can never disagree. What may change in which
 * state is decided here as well: the routes ask, and answer whatever these rules refuse.
 */
import type { OrderStatus } from '../model/schemas.ts';
import { DomainError } from './errors.ts';

const NEXT: Record<OrderStatus, readonly OrderStatus[]> = {
  pending: ['paid', 'cancelled'],
  paid: ['shipped'],
  shipped: ['delivered'],
  delivered: [],
  cancelled: [],
};

export function canTransition(from: OrderStatus, to: OrderStatus): boolean {
  return NEXT[from].includes(to);
}

/**
 * Checks a status change requested through PATCH. Returns false for a no-op (already in that
 * status), so a retried PATCH succeeds without changing anything.
 */
export function checkPatchTransition(from: OrderStatus, to: OrderStatus, isAdmin: boolean): boolean {
  if (from === to) return false;
  if ((to === 'shipped' || to === 'delivered') && !isAdmin) {
    throw new DomainError('needs-admin', `Only the admin scope may mark an order ${to}`, {});
  }
  if (to === 'paid') {
    throw new DomainError('invalid-transition', 'An order becomes paid through POST /v1/payments', {
      from,
      to,
    });
  }
  if (!canTransition(from, to)) {
    throw new DomainError('invalid-transition', `An order cannot go from ${from} to ${to}`, {
      from,
      to,
      allowed: NEXT[from],
    });
  }
  return true;
}

/** Items and currency are replaced only while nothing has been paid for them. */
export function assertReplaceable(status: OrderStatus): void {
  if (status !== 'pending') {
    throw new DomainError('not-pending', `A ${status} order cannot be replaced`, { status });
  }
}

export function assertItemsChangeable(status: OrderStatus): void {
  if (status !== 'pending') {
    throw new DomainError('not-pending', `The items of a ${status} order cannot change`, { status });
  }
}

/** Paid orders carry a payment and an invoice: financial records are never deleted. */
export function assertDeletable(status: OrderStatus): void {
  if (status !== 'pending' && status !== 'cancelled') {
    throw new DomainError('not-pending', `A ${status} order cannot be deleted`, { status });
  }
}
