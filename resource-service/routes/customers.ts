/**
 * /v1/customers/{customer_id} and its invoices. A customer sees only its own record; another
 * customer's id answers exactly like an unknown one. The route table at the end declares each
 * route once, with its OpenAPI description.
 */
import type { ServerResponse } from 'node:http';
import { isAdmin, isValidCustomerId } from '../../shared/principal.ts';
import type { Principal } from '../../shared/principal.ts';
import { customerExists, findCustomer } from '../data/customers.ts';
import { listInvoices } from '../data/invoices.ts';
import { requireScope } from '../http/identity.ts';
import { integerBetween, oneOf, parseQuery, text, timestamp } from '../http/query.ts';
import type { ServiceRequest } from '../http/request.ts';
import { sendRepresentation } from '../http/respond.ts';
import {
  badRequest,
  common,
  headerRef,
  json,
  listParameters,
  parameterRef,
  READ_HEADERS,
  ref,
  responseRef,
} from '../openapi/components.ts';
import { INVOICE_STATUSES } from '../model/schemas.ts';
import { notFound } from './context.ts';
import type { RouteContext } from './context.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../model/limits.ts';
import { cursorBinding, sendPage } from './list.ts';
import { customerEtag, toCustomer, toInvoice } from './representations.ts';
import type { OperationDoc, Resource } from './route.ts';

const invoiceParameters = {
  limit: integerBetween(1, MAX_PAGE_SIZE),
  cursor: text(/^[\w.-]{1,512}$/, 'must be a next_cursor value from a previous page'),
  sort: oneOf(['issued_at', '-issued_at'] as const),
  status: oneOf(INVOICE_STATUSES),
  issued_after: timestamp,
  issued_before: timestamp,
};

/**
 * The customer id from the path, when the caller may see that customer; else 404. An id no
 * customer can have (outside CUSTOMER_ID_PATTERN, as the OpenAPI document says) is unknown
 * without asking the database, which could not even store some of them (a NUL byte).
 */
function visibleCustomerId(principal: Principal, id: string | undefined): string {
  if (!isValidCustomerId(id) || (id !== principal.customerId && !isAdmin(principal)))
    throw notFound('customer');
  return id;
}

async function getCustomer(req: ServiceRequest, res: ServerResponse, ctx: RouteContext): Promise<void> {
  parseQuery(req.search ?? '', {});
  const id = visibleCustomerId(req.principal, req.params['customer_id']);
  const row = await findCustomer(ctx.sql, id);
  if (row === undefined) throw notFound('customer');
  sendRepresentation(req, res, { etag: customerEtag(row), body: toCustomer(row) });
}

async function listCustomerInvoices(
  req: ServiceRequest,
  res: ServerResponse,
  ctx: RouteContext,
): Promise<void> {
  requireScope(req.principal, 'invoices:read');
  const customerId = visibleCustomerId(req.principal, req.params['customer_id']);
  const q = parseQuery(req.search ?? '', invoiceParameters);
  if (!(await customerExists(ctx.sql, customerId))) throw notFound('customer');

  const binding = cursorBinding(req, req.principal);
  const limit = q.limit ?? DEFAULT_PAGE_SIZE;
  const rows = await listInvoices(ctx.sql, {
    customerId,
    limit,
    descending: (q.sort ?? '-issued_at') === '-issued_at',
    ...(q.cursor === undefined ? {} : { after: ctx.cursors.decode(q.cursor, binding) }),
    ...(q.status === undefined ? {} : { status: q.status }),
    ...(q.issued_after === undefined ? {} : { issuedAfter: q.issued_after }),
    ...(q.issued_before === undefined ? {} : { issuedBefore: q.issued_before }),
  });
  sendPage(req, res, {
    rows,
    limit,
    toItem: toInvoice,
    position: (row) => ({ at: row.issued_at.toISOString(), id: row.id }),
    version: (row) => `${row.id}:${row.version}`,
    cursors: ctx.cursors,
    binding,
  });
}

// ---- OpenAPI descriptions ----------------------------------------------------------------

const getCustomerDoc: OperationDoc = {
  operationId: 'getCustomer',
  tags: ['customers'],
  summary: 'Read a customer',
  description:
    'Any authenticated caller may read its own customer record; admins may read any. The record is created on the first request of a customer.',
  parameters: [parameterRef('IfNoneMatch')],
  responses: {
    '200': json('The customer.', ref('Customer'), { ETag: headerRef('ETag'), ...READ_HEADERS }),
    '304': responseRef('NotModified'),
    '400': badRequest(),
    '404': responseRef('NotFound'),
    ...common,
  },
};

const listInvoicesDoc: OperationDoc = {
  operationId: 'listInvoices',
  tags: ['customers'],
  summary: "List a customer's invoices",
  description: 'Scope `invoices:read`. Newest first by default.',
  parameters: listParameters('issued_at', 'issued', INVOICE_STATUSES),
  responses: {
    '200': json('One page of invoices.', ref('InvoiceList'), {
      ETag: headerRef('ETag'),
      Link: headerRef('Link'),
      ...READ_HEADERS,
    }),
    '304': responseRef('NotModified'),
    '400': badRequest('ERR_INVALID_PARAMETER', 'ERR_INVALID_CURSOR'),
    '403': responseRef('Forbidden'),
    '404': responseRef('NotFound'),
    ...common,
  },
};

export const CUSTOMER_ROUTES: readonly Resource[] = [
  {
    path: '/v1/customers/{customer_id}',
    parameters: [parameterRef('CustomerId')],
    operations: [{ method: 'GET', handle: getCustomer, doc: getCustomerDoc }],
  },
  {
    path: '/v1/customers/{customer_id}/invoices',
    parameters: [parameterRef('CustomerId')],
    operations: [{ method: 'GET', handle: listCustomerInvoices, doc: listInvoicesDoc }],
  },
];
