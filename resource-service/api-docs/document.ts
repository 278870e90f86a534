/**
 * The OpenAPI 3.1 description of the API as clients see it through the gateway. The paths come
 * from the route table, the same one the service registers, so every route served is described
 * and nothing else is, plus the public ones (this document and the API reference); the schemas are the TypeBox schemas that validate requests (OpenAPI 3.1
 * speaks JSON Schema 2020-12, so they go in unchanged); the reusable headers, responses and
 * parameters are in openapi/components.ts.
 */
import { Type } from '@sinclair/typebox';
import { errorTable, problemType } from '../../shared/errors.ts';
import type { ErrorCode } from '../../shared/errors.ts';
import { headers, parameters, plain, ref, responses } from '../openapi/components.ts';
import type { Json } from '../openapi/components.ts';
import { pathsOf } from './paths.ts';
import { PUBLIC_TAG, publicPaths } from './public-paths.ts';
import { MAX_PAGE_SIZE } from '../model/limits.ts';
import { ROUTE_TABLE } from '../routes/table.ts';
import {
  Customer,
  Invoice,
  ListOf,
  Order,
  OrderInput,
  OrderPatch,
  Payment,
  PaymentInput,
  Problem,
  User,
} from '../model/schemas.ts';

const INFO = {
  title: 'Portico resource API',
  version: '1.0.0',
  description: [
    'Orders, payments, invoices and customers behind the Portico gateway.',
    '',
    "Every request is authenticated with an OAuth 2.0 access token (`Authorization: Bearer`) or a signed API key (`Authorization: ApiKey`); scopes are named in each operation. Every query is scoped to the caller's customer: another customer's resource answers 404, like a missing one.",
    '',
    'Errors are RFC 9457 `application/problem+json` with a stable `code`. Every response states its cacheability with `Cache-Control`. Lists take `limit` (1-100), an opaque `cursor`, `sort` and filters; unknown or malformed parameters are refused with 400, never ignored.',
  ].join('\n'),
  license: { name: 'MIT', identifier: 'MIT' },
};

const SERVERS = [
  {
    url: '/',
    description:
      'The Portico gateway that served this document, in production or any other environment. HTTPS only.',
    'x-internal': false,
  },
];

const TAGS = [
  { name: 'orders', description: "The caller's orders and their status." },
  { name: 'payments', description: 'Paying orders.' },
  { name: 'customers', description: 'Customer records and their invoices.' },
  { name: 'users', description: 'The authenticated caller.' },
  PUBLIC_TAG,
];

const SECURITY_SCHEMES = {
  bearer: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'RFC 9068 access token (`typ: at+jwt`) from the configured issuer, verified as RFC8725 (JWT Best Current Practices) recommends: an allow-list of asymmetric algorithms (never `none` or HS*), iss, aud, exp and nbf checked with a bounded clock skew, keys only from the configured JWKS (never `jku`, `x5u` or an embedded `jwk`).',
  },
  apiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: '`Authorization: ApiKey <key>`: a signed, revocable API key. Never accepted in the URL.',
  },
};

const schemas = (): Json => ({
  Order: plain(Order),
  OrderInput: plain(OrderInput),
  OrderPatch: plain(OrderPatch),
  OrderList: plain(ListOf(Type.Unsafe(ref('Order')), MAX_PAGE_SIZE)),
  Payment: plain(Payment),
  PaymentInput: plain(PaymentInput),
  Invoice: plain(Invoice),
  InvoiceList: plain(ListOf(Type.Unsafe(ref('Invoice')), MAX_PAGE_SIZE)),
  Customer: plain(Customer),
  User: plain(User),
  Problem: {
    ...plain(Problem),
    description: `RFC 9457 problem details. Types: ${Object.keys(errorTable)
      .map((c) => `${problemType(c as ErrorCode)} (${c})`)
      .join(', ')}.`,
  },
});

/**
 * OpenAPI's integer formats follow from each integer's range, so they are derived here rather
 * than written twice (Ajv would also need them registered to accept them).
 */
function addIntegerFormats(node: unknown): void {
  if (Array.isArray(node)) {
    node.forEach(addIntegerFormats);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const schema = node as Json;
  const { type, minimum, maximum, format } = schema;
  if (
    type === 'integer' &&
    format === undefined &&
    typeof minimum === 'number' &&
    typeof maximum === 'number'
  ) {
    schema['format'] = minimum >= -(2 ** 31) && maximum <= 2 ** 31 - 1 ? 'int32' : 'int64';
  }
  Object.values(schema).forEach(addIntegerFormats);
}

export function buildOpenApiDocument(): Json {
  const document = structuredClone({
    openapi: '3.1.0',
    info: INFO,
    servers: SERVERS,
    security: [{ bearer: [] }, { apiKey: [] }],
    tags: TAGS,
    paths: { ...pathsOf(ROUTE_TABLE), ...publicPaths() },
    components: { securitySchemes: SECURITY_SCHEMES, schemas: schemas(), headers, responses, parameters },
  });
  // On a copy: the route table and the components are shared by every call.
  addIntegerFormats(document);
  return document;
}
