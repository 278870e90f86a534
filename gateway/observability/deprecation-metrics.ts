/**
 * Who still calls deprecated routes, in /metrics: by route and kind of caller, and by route
 * and customer. Customer ids come from tokens, so their label values are bounded: the first
 * MAX_CUSTOMERS distinct customers get their own series, later ones count as `other`.
 */
import type { Registry } from 'prom-client';
import type { Principal } from '../../shared/principal.ts';
import { createBoundCounter } from './bound-metrics.ts';

const MAX_CUSTOMERS = 100;

/** Counts one answered request of a deprecated route. */
export type DeprecatedCallCounter = (route: string, principal: Principal | undefined) => void;

export function createDeprecatedCallCounter(registry: Registry): DeprecatedCallCounter {
  const byKind = createBoundCounter(registry, {
    name: 'portico_deprecated_requests_total',
    help: 'Requests to deprecated routes, by route (its name, else its prefix) and principal kind (jwt, apikey, anonymous).',
  });
  const byCustomer = createBoundCounter(registry, {
    name: 'portico_deprecated_requests_by_customer_total',
    help: `Requests to deprecated routes, by route (its name, else its prefix) and customer (the first ${MAX_CUSTOMERS} customers seen; later ones as "other").`,
  });
  const bound = new Map<string, () => void>();
  const customers = new Set<string>();
  const count = (kind: 'kind' | 'customer', route: string, value: string) => {
    const key = `${kind} ${route} ${value}`;
    let increment = bound.get(key);
    if (increment === undefined) {
      increment =
        kind === 'kind'
          ? byKind.bind({ route, principal_kind: value })
          : byCustomer.bind({ route, customer: value });
      bound.set(key, increment);
    }
    increment();
  };
  return (route, principal) => {
    count('kind', route, principal?.authMethod ?? 'anonymous');
    let customer = principal?.customerId ?? 'none';
    if (!customers.has(customer)) {
      if (customers.size < MAX_CUSTOMERS) customers.add(customer);
      else customer = 'other';
    }
    count('customer', route, customer);
  };
}
