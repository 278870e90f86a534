/**
 * The schema refuses bad states by itself, whatever the service code does.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { Sql } from 'postgres';
import { connectDatabase } from '../../resource-service/db/connect.ts';

let sql: Sql;
const alice = `cus_constraints_${randomUUID().slice(0, 8)}`;
const bob = `${alice}_b`;
let order: string;

beforeAll(async () => {
  sql = connectDatabase({ url: inject('databaseUrl'), max: 1 });
  await sql`insert into customers (id) values (${alice}), (${bob})`;
  [{ id: order }] =
    (await sql`insert into orders (customer_id, currency) values (${alice}, 'EUR') returning id`) as unknown as [
      { id: string },
    ];
});
afterAll(async () => {
  await sql.end();
});

const violation = (code: string) => expect.objectContaining({ code });

describe('database constraints', () => {
  it('refuse unknown statuses, bad currencies and malformed customer ids', async () => {
    await expect(sql`update orders set status = 'lost' where id = ${order}`).rejects.toEqual(
      violation('23514'),
    );
    await expect(sql`insert into orders (customer_id, currency) values (${alice}, 'eur')`).rejects.toEqual(
      violation('23514'),
    );
    await expect(sql`insert into customers (id) values ('bad id with spaces')`).rejects.toEqual(
      violation('23514'),
    );
  });

  it('refuse zero or huge quantities and negative prices', async () => {
    for (const [quantity, price] of [
      [0, 1],
      [10_001, 1],
      [1, -1],
    ] as const) {
      await expect(
        sql`insert into order_items (order_id, position, sku, quantity, unit_price) values (${order}, 0, 'A', ${quantity}, ${price})`,
      ).rejects.toEqual(violation('23514'));
    }
  });

  it("refuse a payment or invoice that points at another customer's order", async () => {
    await expect(
      sql`insert into payments (order_id, customer_id, amount, currency) values (${order}, ${bob}, 100, 'EUR')`,
    ).rejects.toEqual(violation('23503'));
  });

  it('refuse a second payment of one order', async () => {
    await sql`insert into payments (order_id, customer_id, amount, currency) values (${order}, ${alice}, 100, 'EUR')`;
    await expect(
      sql`insert into payments (order_id, customer_id, amount, currency) values (${order}, ${alice}, 100, 'EUR')`,
    ).rejects.toEqual(violation('23505'));
  });

  it('refuse a duplicate idempotency key for one customer and a non-positive amount', async () => {
    const insert = () => sql`
      insert into idempotency_records (customer_id, idempotency_key, fingerprint, response_status, expires_at)
      values (${alice}, 'k1', ${Buffer.alloc(32)}, 201, now() + interval '1 day')`;
    await insert();
    await expect(insert()).rejects.toEqual(violation('23505'));
    await expect(
      sql`insert into payments (order_id, customer_id, amount, currency) values (${order}, ${alice}, 0, 'EUR')`,
    ).rejects.toEqual(violation('23514'));
  });
});
