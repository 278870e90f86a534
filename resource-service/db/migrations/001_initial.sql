-- Portico resource service: the first schema.
-- Constraints carry the domain rules so that a bug in the service cannot store a bad state:
-- statuses, quantities, amounts and currencies are checked here, every row is tied to its
-- customer, and a payment or invoice cannot point at another customer's order.

create table customers (
  id          text primary key check (id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
  version     integer not null default 1 check (version >= 1),
  created_at  timestamptz(3) not null default now(),
  updated_at  timestamptz(3) not null default now()
);

create table orders (
  id           uuid primary key default gen_random_uuid(),
  customer_id  text not null references customers (id),
  status       text not null default 'pending'
               check (status in ('pending', 'paid', 'shipped', 'delivered', 'cancelled')),
  currency     char(3) not null check (currency ~ '^[A-Z]{3}$'),
  -- Bumped on every change; the strong ETag is derived from it.
  version      integer not null default 1 check (version >= 1),
  created_at   timestamptz(3) not null default now(),
  updated_at   timestamptz(3) not null default now(),
  unique (id, customer_id)
);
-- Keyset pagination walks (created_at, id) within one customer.
create index orders_customer_created on orders (customer_id, created_at, id);
create index orders_created on orders (created_at, id);

create table order_items (
  order_id    uuid not null references orders (id) on delete cascade,
  position    smallint not null check (position between 0 and 99),
  sku         text not null check (sku ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
  quantity    integer not null check (quantity between 1 and 10000),
  unit_price  bigint not null check (unit_price between 0 and 1000000000),
  primary key (order_id, position)
);

create table payments (
  id           uuid primary key default gen_random_uuid(),
  -- unique: an order is paid at most once, whatever the service does.
  order_id     uuid not null unique,
  customer_id  text not null,
  amount       bigint not null check (amount > 0),
  currency     char(3) not null check (currency ~ '^[A-Z]{3}$'),
  created_at   timestamptz(3) not null default now(),
  foreign key (order_id, customer_id) references orders (id, customer_id)
);

create table invoices (
  id           uuid primary key default gen_random_uuid(),
  order_id     uuid not null unique,
  customer_id  text not null,
  payment_id   uuid not null unique references payments (id),
  amount       bigint not null check (amount > 0),
  currency     char(3) not null check (currency ~ '^[A-Z]{3}$'),
  status       text not null default 'paid' check (status in ('open', 'paid', 'void')),
  version      integer not null default 1 check (version >= 1),
  issued_at    timestamptz(3) not null default now(),
  foreign key (order_id, customer_id) references orders (id, customer_id)
);
create index invoices_customer_issued on invoices (customer_id, issued_at, id);

-- IETF httpapi Idempotency-Key: one record per (customer, key), written in the same
-- transaction as the order or payment it protects.
create table idempotency_records (
  customer_id      text not null references customers (id),
  idempotency_key  text not null check (length(idempotency_key) between 1 and 255),
  -- SHA-256 of method, path and canonical body: the same key with another request is refused.
  fingerprint      bytea not null check (length(fingerprint) = 32),
  response_status  smallint not null check (response_status between 200 and 599),
  response_headers jsonb not null default '{}',
  response_body    jsonb,
  created_at       timestamptz(3) not null default now(),
  expires_at       timestamptz(3) not null,
  primary key (customer_id, idempotency_key),
  check (expires_at > created_at)
);
create index idempotency_records_expiry on idempotency_records (expires_at);
