/**
 * The JSON Schemas of the API, written once with TypeBox: Ajv validates requests with them and
 * the OpenAPI document is generated from them, so the two cannot drift apart.
 */
import { Type } from '@sinclair/typebox';
import type { Static, TSchema } from '@sinclair/typebox';
import { CUSTOMER_ID_PATTERN, SCOPES } from '../shared/principal.ts';

/** ISO 4217 codes as the ICU data of the running Node knows them. */
export const CURRENCIES: readonly string[] = Intl.supportedValuesOf('currency');

export const ORDER_STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
export const INVOICE_STATUSES = ['open', 'paid', 'void'] as const;

const Uuid = Type.String({ format: 'uuid', description: 'Server-assigned identifier (UUID).' });
const Timestamp = Type.String({
  format: 'date-time',
  description: 'RFC 3339 time, UTC, millisecond precision.',
});
const CustomerId = Type.String({
  pattern: CUSTOMER_ID_PATTERN,
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
    sku: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$', description: 'Stock-keeping unit.' }),
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

export const User = Type.Object(
  {
    subject: Type.String(),
    customer_id: CustomerId,
    scopes: Type.Array(Type.String({ examples: [...SCOPES] })),
    auth_method: StringEnum(['jwt', 'apikey'] as const),
    key_id: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const ListOf = <T extends TSchema>(item: T) =>
  Type.Object(
    {
      data: Type.Array(item),
      next_cursor: Type.Union([Type.String(), Type.Null()], {
        description: 'Pass as `cursor` to get the next page; null on the last page.',
      }),
    },
    { additionalProperties: false },
  );

export const Problem = Type.Object(
  {
    type: Type.String({ format: 'uri' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    instance: Type.Optional(Type.String()),
    code: Type.String({ description: 'Stable ERR_* code; switch on this, not on text.' }),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          detail: Type.String(),
          pointer: Type.Optional(Type.String({ description: 'JSON Pointer into the body' })),
          parameter: Type.Optional(Type.String()),
          header: Type.Optional(Type.String()),
        }),
      ),
    ),
  },
  { additionalProperties: true },
);
