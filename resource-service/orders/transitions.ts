/**
 * The order state machine (DESIGN.md section 3):
 *   pending → paid → shipped → delivered,  pending → cancelled.
 * Who may drive which step through PATCH is decided here too; paying happens only through
 * POST /v1/payments, so that money and status can never disagree.
 */
import { HttpProblem } from '../../shared/errors.ts';
import { insufficientScope } from '../http/identity.ts';
import type { OrderStatus } from '../schemas.ts';

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
    throw insufficientScope('admin', `Only the admin scope may mark an order ${to}`);
  }
  if (to === 'paid') {
    throw new HttpProblem('ERR_INVALID_TRANSITION', 'An order becomes paid through POST /v1/payments', {
      extensions: { from, to },
    });
  }
  if (!canTransition(from, to)) {
    throw new HttpProblem('ERR_INVALID_TRANSITION', `An order cannot go from ${from} to ${to}`, {
      extensions: { from, to, allowed: NEXT[from] },
    });
  }
  return true;
}
