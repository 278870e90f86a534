/**
 * What every data module takes: a connection (the pool or an open transaction) and whose rows
 * a query may see. Every read is scoped, so there is no unscoped query to call by mistake.
 */
import type { Sql, TransactionSql } from 'postgres';

export type Db = Sql | TransactionSql;

/** Whose rows a query may see: one customer's or, for admins, every customer's. */
export type OwnerScope = { customerId: string } | 'all-customers';
