/**
 * Every route of the API, once, in the order polka tries them. The service registers this
 * table (routes/register.ts) and the OpenAPI document describes it (api-docs/paths.ts).
 */
import { CUSTOMER_ROUTES } from './customers.ts';
import { ORDER_ROUTES } from './orders.ts';
import { PAYMENT_ROUTES } from './payments.ts';
import type { Resource } from './route.ts';
import { USER_ROUTES } from './users.ts';

export const ROUTE_TABLE: readonly Resource[] = [
  ...ORDER_ROUTES,
  ...PAYMENT_ROUTES,
  ...CUSTOMER_ROUTES,
  ...USER_ROUTES,
];
