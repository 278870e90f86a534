/**
 * /v1/orders: create (idempotent), read, list, replace, patch (RFC 7396), delete.
 */
import type { Polka } from 'polka';
import { CACHE_INVALIDATES, formatInvalidates } from '../../shared/cache-headers.ts';
import { HttpProblem } from '../../shared/errors.ts';
import { isAdmin } from '../../shared/principal.ts';
import type { ServiceRequest } from '../app.ts';
import { readJsonBody } from '../http/body.ts';
import { assertIfMatch, isNotModified } from '../http/conditional.ts';
import { insufficientScope, requireScope } from '../http/identity.ts';
import { integerBetween, oneOf, parseQuery, text, timestamp } from '../http/query.ts';
import { NO_STORE, PER_CUSTOMER, sendJson, sendNotModified } from '../http/respond.ts';
import { idempotencyKeyOf, requestFingerprint, runIdempotent, sendIdempotentResult } from '../idempotency.ts';
import {
  deleteOrder,
  findOrder,
  insertOrder,
  listOrders,
  orderEtag,
  toOrder,
  updateOrder,
} from '../orders/repository.ts';
import type { OrderRow } from '../orders/repository.ts';
import { checkPatchTransition } from '../orders/transitions.ts';
import { CUSTOMER_ID_PATTERN } from '../../shared/principal.ts';
import { ORDER_READ_ONLY_FIELDS, ORDER_STATUSES, OrderInput, OrderPatch } from '../schemas.ts';
import { createValidator } from '../validate.ts';
import { methodNotAllowed } from './method-not-allowed.ts';
import { notFound, ownerScope, uuidParam } from './context.ts';
import type { RouteContext } from './context.ts';
import { cursorBinding, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, sendPage } from './list.ts';

const JSON_TYPES = ['application/json'] as const;
const PATCH_TYPES = ['application/merge-patch+json', 'application/json'] as const;

/** POST and PUT take the same body: the fields a client may set, status excluded. */
const validateOrderInput = createValidator(OrderInput, [...ORDER_READ_ONLY_FIELDS, 'status']);
const validatePatch = createValidator(OrderPatch, [...ORDER_READ_ONLY_FIELDS]);

const listParameters = {
  limit: integerBetween(1, MAX_PAGE_SIZE),
  cursor: text(/^[\w.-]{1,512}$/, 'must be a next_cursor value from a previous page'),
  sort: oneOf(['created_at', '-created_at'] as const),
  status: oneOf(ORDER_STATUSES),
  created_after: timestamp,
  created_before: timestamp,
  customer_id: text(new RegExp(CUSTOMER_ID_PATTERN), 'must be a customer id'),
};

function orderRead(row: OrderRow) {
  return { status: 200, body: toOrder(row), headers: { ETag: orderEtag(row) }, cache: PER_CUSTOMER };
}

/** A changed order: the gateway drops the order and every list of orders. */
function orderWritten(row: OrderRow) {
  return {
    status: 200,
    body: toOrder(row),
    headers: { ETag: orderEtag(row), [CACHE_INVALIDATES]: formatInvalidates(['/v1/orders']) },
    cache: NO_STORE,
  };
}

export function registerOrderRoutes(app: Polka<ServiceRequest>, ctx: RouteContext): void {
  const { sql } = ctx;

  app.get('/v1/orders', async (req, res) => {
    requireScope(req.principal, 'orders:read');
    const query = parseQuery(req.search ?? '', listParameters);
    if (query.customer_id !== undefined && !isAdmin(req.principal)) {
      throw insufficientScope('admin', 'Filtering by customer_id needs the admin scope');
    }
    const binding = cursorBinding(req, req.principal);
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const rows = await listOrders(sql, {
      scope: ownerScope(req.principal),
      limit,
      descending: (query.sort ?? '-created_at') === '-created_at',
      ...(query.cursor === undefined ? {} : { after: ctx.cursors.decode(query.cursor, binding) }),
      ...(query.status === undefined ? {} : { status: query.status }),
      ...(query.created_after === undefined ? {} : { createdAfter: query.created_after }),
      ...(query.created_before === undefined ? {} : { createdBefore: query.created_before }),
      ...(query.customer_id === undefined ? {} : { customerId: query.customer_id }),
    });
    sendPage(req, res, {
      rows,
      limit,
      toItem: toOrder,
      position: (row) => ({ at: row.created_at.toISOString(), id: row.id }),
      version: (row) => `${row.id}:${row.version}`,
      cursors: ctx.cursors,
      binding,
    });
  });

  app.post('/v1/orders', async (req, res) => {
    requireScope(req.principal, 'orders:write');
    const key = idempotencyKeyOf(req);
    const body = await readJsonBody(req, { maxBytes: ctx.maxBodyBytes, mediaTypes: JSON_TYPES });
    const input = validateOrderInput(body);
    const customerId = req.principal.customerId;
    const result = await runIdempotent(
      sql,
      { customerId, key, fingerprint: requestFingerprint('POST', req.path, body) },
      async (tx) => {
        const row = await insertOrder(tx, customerId, input);
        return {
          status: 201,
          headers: {
            Location: `/v1/orders/${row.id}`,
            ETag: orderEtag(row),
            [CACHE_INVALIDATES]: formatInvalidates(['/v1/orders']),
          },
          body: toOrder(row),
        };
      },
    );
    sendIdempotentResult(res, result);
  });

  app.get('/v1/orders/:id', async (req, res) => {
    requireScope(req.principal, 'orders:read');
    parseQuery(req.search ?? '', {});
    const id = uuidParam(req.params['id'], 'order');
    const row = await findOrder(sql, id, ownerScope(req.principal));
    if (row === undefined) throw notFound('order');
    if (isNotModified(req, orderEtag(row))) {
      sendNotModified(res, orderEtag(row), PER_CUSTOMER);
      return;
    }
    sendJson(res, orderRead(row));
  });

  app.put('/v1/orders/:id', async (req, res) => {
    requireScope(req.principal, 'orders:write');
    const id = uuidParam(req.params['id'], 'order');
    const input = validateOrderInput(
      await readJsonBody(req, { maxBytes: ctx.maxBodyBytes, mediaTypes: JSON_TYPES }),
    );
    const row = await sql.begin(async (tx) => {
      const current = await findOrder(tx, id, ownerScope(req.principal), { forUpdate: true });
      if (current === undefined) throw notFound('order');
      assertIfMatch(req, orderEtag(current));
      if (current.status !== 'pending') {
        throw new HttpProblem('ERR_ORDER_NOT_PENDING', `A ${current.status} order cannot be replaced`);
      }
      return updateOrder(tx, id, { items: input.items, currency: input.currency });
    });
    sendJson(res, orderWritten(row));
  });

  app.patch('/v1/orders/:id', async (req, res) => {
    requireScope(req.principal, 'orders:write');
    const id = uuidParam(req.params['id'], 'order');
    const patch = validatePatch(
      await readJsonBody(req, { maxBytes: ctx.maxBodyBytes, mediaTypes: PATCH_TYPES }),
    );
    const row = await sql.begin(async (tx) => {
      const current = await findOrder(tx, id, ownerScope(req.principal), { forUpdate: true });
      if (current === undefined) throw notFound('order');
      assertIfMatch(req, orderEtag(current));
      if (patch.items !== undefined && current.status !== 'pending') {
        throw new HttpProblem(
          'ERR_ORDER_NOT_PENDING',
          `The items of a ${current.status} order cannot change`,
        );
      }
      const statusChanges =
        patch.status !== undefined &&
        checkPatchTransition(current.status, patch.status, isAdmin(req.principal));
      if (!statusChanges && patch.items === undefined) return current;
      return updateOrder(tx, id, {
        ...(statusChanges ? { status: patch.status } : {}),
        ...(patch.items === undefined ? {} : { items: patch.items }),
      });
    });
    sendJson(res, orderWritten(row));
  });

  app.delete('/v1/orders/:id', async (req, res) => {
    requireScope(req.principal, 'orders:write');
    const id = uuidParam(req.params['id'], 'order');
    await sql.begin(async (tx) => {
      const current = await findOrder(tx, id, ownerScope(req.principal), { forUpdate: true });
      if (current === undefined) throw notFound('order');
      assertIfMatch(req, orderEtag(current));
      // Paid orders carry a payment and an invoice: financial records are never deleted.
      if (current.status !== 'pending' && current.status !== 'cancelled') {
        throw new HttpProblem('ERR_ORDER_NOT_PENDING', `A ${current.status} order cannot be deleted`);
      }
      await deleteOrder(tx, id);
    });
    sendJson(res, {
      status: 204,
      headers: { [CACHE_INVALIDATES]: formatInvalidates(['/v1/orders']) },
      cache: NO_STORE,
    });
  });

  methodNotAllowed(app, '/v1/orders', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/v1/orders/:id', ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE']);
}
