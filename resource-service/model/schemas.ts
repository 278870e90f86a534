/**
 * The JSON Schemas of the API, written once with TypeBox: Ajv validates requests with them and
 * the OpenAPI document is generated from them, so the two cannot drift apart.
 */
import { Type } from '@sinclair/typebox';
import type { Static, TSchema } from '@sinclair/typebox';
import { CUSTOMER_ID_PATTERN, SCOPES } from '../../shared/principal.ts';

/** ISO 4217 codes as the ICU data of the running Node knows them. */
export const CURRENCIES: readonly string[] = Intl.supportedValuesOf('currency');

export const ORDER_STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
export const INVOICE_STATUSES = ['open', 'paid', 'void'] as const;

const Uuid = Type.String({
  format: 'uuid',
  maxLength: 36,
  description: 'Server-assigned identifier (UUID).',
});
/** Always `Date#toISOString()`: `2026-01-31T12:00:00.000Z`, 24 characters. */
const Timestamp = Type.String({
  format: 'date-time',
  maxLength: 24,
  description: 'RFC 3339 time, UTC, millisecond precision.',
});
const CustomerId = Type.String({
  pattern: CUSTOMER_ID_PATTERN,
  maxLength: 128,
  description: "The customer's id, as the identity provider's customer claim carries it.",
});
/** A string enum as plain JSON Schema `enum`: one clear error and a readable OpenAPI. */
const StringEnum = <T extends string>(values: readonly T[], options: Record<string, unknown> = {}) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });

const Currency = StringEnum(CURRENCIES, { description: 'ISO 4217 currency code.', example: 'EUR' });
/** Money is an integer count of the currency's minor unit (cents for EUR): no rounding, ever. */
const MinorUnits = (description: string, minimum: number, maximum: number) =>
  Type.Integer({ minimum, maximum, description });

export const OrderItem = Type.Object(
  {
    sku: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$',
      maxLength: 64,
      description: 'Stock-keeping unit.',
    }),
    quantity: Type.Integer({ minimum: 1, maximum: 10_000 }),
    unit_price: MinorUnits('Price of one unit in minor units of the currency.', 0, 1_000_000_000),
  },
  { additionalProperties: false },
);

const OrderItems = Type.Array(OrderItem, { minItems: 1, maxItems: 100 });

export const OrderStatusSchema = StringEnum(ORDER_STATUSES, {
  description: 'pending → paid (by POST /v1/payments) → shipped → delivered (admin); pending → cancelled.',
});

export const Order = Type.Object(
  {
    id: Uuid,
    customer_id: CustomerId,
    status: OrderStatusSchema,
    items: OrderItems,
    currency: Currency,
    total: MinorUnits('Sum of quantity × unit_price over the items.', 0, Number.MAX_SAFE_INTEGER),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false },
);
export type Order = Static<typeof Order>;

/** POST /v1/orders and PUT /v1/orders/{id}: only what a client may set. */
export const OrderInput = Type.Object(
  { items: OrderItems, currency: Currency },
  { additionalProperties: false },
);
export type OrderInput = Static<typeof OrderInput>;

/** PATCH /v1/orders/{id} (RFC 7396): cancel, ship/deliver (admin), or replace items while pending. */
export const OrderPatch = Type.Object(
  { status: Type.Optional(OrderStatusSchema), items: Type.Optional(OrderItems) },
  { additionalProperties: false, minProperties: 1 },
);
export type OrderPatch = Static<typeof OrderPatch>;

/** Fields of an order that exist but that no client may write. */
export const ORDER_READ_ONLY_FIELDS = ['id', 'customer_id', 'total', 'created_at', 'updated_at'] as const;

export const PaymentInput = Type.Object(
  { order_id: Uuid, amount: MinorUnits('Must equal the order total.', 1, Number.MAX_SAFE_INTEGER) },
  { additionalProperties: false },
);
export type PaymentInput = Static<typeof PaymentInput>;

export const Payment = Type.Object(
  {
    id: Uuid,
    order_id: Uuid,
    customer_id: CustomerId,
    invoice_id: Uuid,
    amount: MinorUnits('Amount paid, minor units.', 1, Number.MAX_SAFE_INTEGER),
    currency: Currency,
    created_at: Timestamp,
  },
  { additionalProperties: false },
);
export type Payment = Static<typeof Payment>;

export const Invoice = Type.Object(
  {
    id: Uuid,
    customer_id: CustomerId,
    order_id: Uuid,
    amount: MinorUnits('Invoiced amount, minor units.', 1, Number.MAX_SAFE_INTEGER),
    currency: Currency,
    status: StringEnum(INVOICE_STATUSES),
    issued_at: Timestamp,
  },
  { additionalProperties: false },
);
export type Invoice = Static<typeof Invoice>;

export const Customer = Type.Object(
  { id: CustomerId, created_at: Timestamp, updated_at: Timestamp },
  { additionalProperties: false },
);
export type Customer = Static<typeof Customer>;

/**
 * GET /v1/users/me: the principal as the gateway verified it. `subject` and `scopes` are the
 * credential's own claims, passed on as the identity provider wrote them.
 */
export const User = Type.Object(
  {
    subject: Type.String({ description: "The token's `sub`, or the API key's id." }),
    customer_id: CustomerId,
    scopes: Type.Array(
      Type.String({
        pattern: '^[^ ]+$',
        description: 'As granted; scopes this API does not know grant nothing.',
      }),
      { examples: [[...SCOPES]] },
    ),
    auth_method: StringEnum(['jwt', 'apikey'] as const),
    key_id: Type.Optional(
      Type.String({ pattern: '^ak_[A-Za-z0-9_-]{22}$', maxLength: 25, description: 'The API key used.' }),
    ),
  },
  { additionalProperties: false },
);

/** Pagination cursors: base64url payload, a dot, base64url signature. */
const Cursor = Type.String({ pattern: '^[A-Za-z0-9_.-]{1,512}$', maxLength: 512 });

/** One page of a list: at most `maxItems` items, and the cursor of the next page. */
export const ListOf = <T extends TSchema>(item: T, maxItems: number) =>
  Type.Object(
    {
      data: Type.Array(item, { maxItems }),
      next_cursor: Type.Union([Cursor, Type.Null()], {
        description: 'Pass as `cursor` to get the next page; null on the last page.',
      }),
    },
    { additionalProperties: false },
  );

/**
 * RFC 9457 problem details, with our stable `code`. `detail`, `instance` and `errors` describe
 * the request that failed, so their size follows the request's, not a constant.
 */
export const Problem = Type.Object(
  {
    type: Type.String({
      format: 'uri',
      pattern: '^urn:portico:problem:[a-z0-9-]+$',
      maxLength: 128,
      description: 'URN naming the problem type; one per code.',
    }),
    title: Type.String({ maxLength: 128, description: 'Fixed per code: the same for every occurrence.' }),
    status: Type.Integer({
      minimum: 400,
      maximum: 599,
      description: 'The HTTP status code of the response.',
    }),
    detail: Type.String({ description: 'What went wrong with this request, for a person to read.' }),
    instance: Type.Optional(Type.String({ description: 'The path of the request that failed.' })),
    code: Type.String({
      pattern: '^ERR_[A-Z0-9_]+$',
      maxLength: 64,
      description: 'Stable ERR_* code; switch on this, not on text.',
    }),
    errors: Type.Optional(
      Type.Array(
        Type.Object(
          {
            detail: Type.String(),
            pointer: Type.Optional(
              Type.String({
                pattern: '^#(/[^/]*)*$',
                description: 'JSON Pointer into the body, as a URI fragment (`#/items/0/quantity`).',
              }),
            ),
            parameter: Type.Optional(
              // The service refuses a request head over 24 KiB (431), so no name can be longer.
              Type.String({ maxLength: 16_384, description: 'Name of the offending query parameter.' }),
            ),
            header: Type.Optional(
              Type.String({
                pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
                maxLength: 64,
                description: 'Name of the offending request header.',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        { description: 'One entry per offending field, parameter or header.' },
      ),
    ),
  },
  { additionalProperties: true },
);
