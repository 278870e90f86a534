/**
 * Customers come from the identity provider; the service keeps a row for each, created the
 * first time a customer calls. Known ids are remembered so the insert runs once per process
 * and customer, not once per request.
 */
import { LRUCache } from 'lru-cache';
import type { Sql } from 'postgres';

export interface CustomerRegistry {
  ensure(customerId: string): Promise<void>;
}

export function createCustomerRegistry(sql: Sql, capacity = 50_000): CustomerRegistry {
  const known = new LRUCache<string, true>({ max: capacity });
  return {
    async ensure(customerId) {
      if (known.has(customerId)) return;
      await sql`insert into customers (id) values (${customerId}) on conflict (id) do nothing`;
      known.set(customerId, true);
    },
  };
}
