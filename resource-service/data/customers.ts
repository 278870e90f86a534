/**
 * SQL for customers. Customers come from the identity provider; the service keeps a row for
 * each, created the first time a customer calls. Known ids are remembered so the insert runs
 * once per process and customer, not once per request.
 */
import { LRUCache } from 'lru-cache';
import type { Db } from './db.ts';

export interface CustomerRow {
  id: string;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export interface CustomerRegistry {
  ensure(customerId: string): Promise<void>;
}

export function createCustomerRegistry(db: Db, capacity = 50_000): CustomerRegistry {
  const known = new LRUCache<string, true>({ max: capacity });
  return {
    async ensure(customerId) {
      if (known.has(customerId)) return;
      await db`insert into customers (id) values (${customerId}) on conflict (id) do nothing`;
      known.set(customerId, true);
    },
  };
}

export async function findCustomer(db: Db, id: string): Promise<CustomerRow | undefined> {
  const [row] = await db<
    CustomerRow[]
  >`select id, version, created_at, updated_at from customers where id = ${id}`;
  return row;
}

export async function customerExists(db: Db, id: string): Promise<boolean> {
  const [row] = await db`select 1 from customers where id = ${id}`;
  return row !== undefined;
}
