/**
 * /v1/customers/{id} and its invoices. A customer sees only its own record; another
 * customer's id answers exactly like an unknown one.
 */
import type { Polka } from 'polka';
import { isAdmin } from '../../shared/principal.ts';
import type { Principal } from '../../shared/principal.ts';
import type { ServiceRequest } from '../app.ts';
import { isNotModified } from '../http/conditional.ts';
import { requireScope } from '../http/identity.ts';
import { integerBetween, oneOf, parseQuery, text, timestamp } from '../http/query.ts';
import { PER_CUSTOMER, sendJson, sendNotModified } from '../http/respond.ts';
import { INVOICE_STATUSES } from '../schemas.ts';
import type { Customer, Invoice } from '../schemas.ts';
import { notFound } from './context.ts';
import type { RouteContext } from './context.ts';
import { cursorBinding, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, sendPage } from './list.ts';
import { methodNotAllowed } from './method-not-allowed.ts';

interface CustomerRow {
  id: string;
  version: number;
  created_at: Date;
  updated_at: Date;
}

interface InvoiceRow {
  id: string;
  customer_id: string;
  order_id: string;
  amount: number;
  currency: string;
  status: Invoice['status'];
  version: number;
  issued_at: Date;
}

const invoiceParameters = {
  limit: integerBetween(1, MAX_PAGE_SIZE),
  cursor: text(/^[\w.-]{1,512}$/, 'must be a next_cursor value from a previous page'),
  sort: oneOf(['issued_at', '-issued_at'] as const),
  status: oneOf(INVOICE_STATUSES),
  issued_after: timestamp,
  issued_before: timestamp,
};

/** The customer id from the path, when the caller may see that customer; else 404. */
function visibleCustomerId(principal: Principal, id: string | undefined): string {
  if (id === undefined || (id !== principal.customerId && !isAdmin(principal))) throw notFound('customer');
  return id;
}

function toCustomer(row: CustomerRow): Customer {
  return { id: row.id, created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString() };
}

function toInvoice(row: InvoiceRow): Invoice {
  return {
    id: row.id,
    customer_id: row.customer_id,
    order_id: row.order_id,
    amount: row.amount,
    currency: row.currency,
    status: row.status,
    issued_at: row.issued_at.toISOString(),
  };
}

export function registerCustomerRoutes(app: Polka<ServiceRequest>, ctx: RouteContext): void {
  const { sql } = ctx;

  app.get('/v1/customers/:id', async (req, res) => {
    parseQuery(req.search ?? '', {});
    const id = visibleCustomerId(req.principal, req.params['id']);
    const [row] = await sql<
      CustomerRow[]
    >`select id, version, created_at, updated_at from customers where id = ${id}`;
    if (row === undefined) throw notFound('customer');
    const etag = `"c1.${row.version}"`;
    if (isNotModified(req, etag)) {
      sendNotModified(res, etag, PER_CUSTOMER);
      return;
    }
    sendJson(res, {
      status: 200,
      body: toCustomer(row),
      headers: { ETag: etag },
      cache: PER_CUSTOMER,
    });
  });

  app.get('/v1/customers/:id/invoices', async (req, res) => {
    requireScope(req.principal, 'invoices:read');
    const customerId = visibleCustomerId(req.principal, req.params['id']);
    const query = parseQuery(req.search ?? '', invoiceParameters);
    const [customer] = await sql`select 1 from customers where id = ${customerId}`;
    if (customer === undefined) throw notFound('customer');

    const binding = cursorBinding(req, req.principal);
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const descending = (query.sort ?? '-issued_at') === '-issued_at';
    const after = query.cursor === undefined ? undefined : ctx.cursors.decode(query.cursor, binding);
    const rows = await sql<InvoiceRow[]>`
      select id, customer_id, order_id, amount, currency, status, version, issued_at
      from invoices
      where customer_id = ${customerId}
        ${query.status === undefined ? sql`` : sql`and status = ${query.status}`}
        ${query.issued_after === undefined ? sql`` : sql`and issued_at > ${query.issued_after}`}
        ${query.issued_before === undefined ? sql`` : sql`and issued_at < ${query.issued_before}`}
        ${
          after === undefined
            ? sql``
            : descending
              ? sql`and (issued_at, id) < (${after.at}::timestamptz, ${after.id}::uuid)`
              : sql`and (issued_at, id) > (${after.at}::timestamptz, ${after.id}::uuid)`
        }
      order by ${descending ? sql`issued_at desc, id desc` : sql`issued_at asc, id asc`}
      limit ${limit + 1}`;
    sendPage(req, res, {
      rows,
      limit,
      toItem: toInvoice,
      position: (row) => ({ at: row.issued_at.toISOString(), id: row.id }),
      version: (row) => `${row.id}:${row.version}`,
      cursors: ctx.cursors,
      binding,
    });
  });

  methodNotAllowed(app, '/v1/customers/:id', ['GET', 'HEAD']);
  methodNotAllowed(app, '/v1/customers/:id/invoices', ['GET', 'HEAD']);
}
