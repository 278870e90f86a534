import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_ORDER, startTestService } from '../support/service.ts';
import type { Client, TestService } from '../support/service.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service.close();
});

/** Inserts `count` orders for `client` directly, spread over distinct timestamps and ties. */
async function seedOrders(client: Client, count: number): Promise<string[]> {
  await service.sql`insert into customers (id) values (${client.principal.customerId}) on conflict do nothing`;
  const rows = await service.sql<{ id: string }[]>`
    insert into orders (customer_id, currency, status, created_at)
    select ${client.principal.customerId}, 'EUR',
           (array['pending','paid','cancelled'])[1 + n % 3],
           -- pairs of rows share a timestamp, so the id tie-break is exercised
           now() - make_interval(secs => (${count} - n / 2) * 1.0)
    from generate_series(0, ${count - 1}) as n
    returning id`;
  await service.sql`
    insert into order_items (order_id, position, sku, quantity, unit_price)
    select id, 0, 'SKU-1', 1, 100 from orders where customer_id = ${client.principal.customerId}`;
  return rows.map((r) => r.id);
}

async function pageThrough(client: Client, firstPath: string) {
  const seen: { id: string; created_at: string }[] = [];
  let path: string | undefined = firstPath;
  let pages = 0;
  while (path !== undefined) {
    const res = await client.request('GET', path);
    expect(res.status, path).toBe(200);
    seen.push(...res.body.data);
    pages++;
    const link = res.headers.get('link');
    if (res.body.next_cursor === null) {
      expect(link).toBeNull();
      path = undefined;
    } else {
      const match = /^<([^>]+)>; rel="next"$/.exec(link ?? '');
      expect(match).not.toBeNull();
      path = match?.[1];
      expect(new URL(path ?? '', 'http://x').searchParams.get('cursor')).toBe(res.body.next_cursor);
    }
    // Other orders keep arriving while the client pages.
    await client.request('POST', '/v1/orders', { body: SAMPLE_ORDER });
  }
  return { seen, pages };
}

describe('pagination', () => {
  it('paging through 250 orders returns each exactly once, in order, while others are inserted', async () => {
    const alice = service.newCustomer();
    const ids = await seedOrders(alice, 250);
    for (const sort of ['created_at', '-created_at']) {
      const cutoff = new Date(Date.now() + 1000).toISOString();
      // created_before pins the original 250 for the ascending walk; new orders come after it.
      const { seen, pages } = await pageThrough(
        alice,
        `/v1/orders?limit=30&sort=${sort}&created_before=${cutoff}`,
      );
      const original = seen.filter((o) => ids.includes(o.id));
      expect(original.map((o) => o.id).sort()).toEqual([...ids].sort());
      expect(new Set(seen.map((o) => o.id)).size).toBe(seen.length);
      expect(pages).toBeGreaterThanOrEqual(9);
      const times = seen.map((o) => o.created_at);
      const sorted = [...times].sort();
      expect(times).toEqual(sort === 'created_at' ? sorted : sorted.reverse());
    }
  });

  it('defaults to 20 newest first, and filters by status and time', async () => {
    const bob = service.newCustomer();
    await seedOrders(bob, 30);
    const page = await bob.request('GET', '/v1/orders');
    expect(page.body.data).toHaveLength(20);
    expect(page.body.data[0].created_at >= page.body.data[19].created_at).toBe(true);
    const paid = await bob.request('GET', '/v1/orders?status=paid&limit=100');
    expect(paid.body.data.length).toBe(10);
    expect(paid.body.data.every((o: { status: string }) => o.status === 'paid')).toBe(true);
    const middle = page.body.data[10].created_at as string;
    const after = await bob.request('GET', `/v1/orders?limit=100&created_after=${middle}`);
    expect(after.body.data.every((o: { created_at: string }) => o.created_at > middle)).toBe(true);
    expect(after.body.data.length).toBeGreaterThan(0);
  });

  it('refuses out-of-range limits, unknown, repeated and malformed parameters with 400', async () => {
    const carol = service.newCustomer();
    const cases: [string, string][] = [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=10&limit=20', 'limit'],
      ['sort=total', 'sort'],
      ['status=lost', 'status'],
      ['created_after=yesterday', 'created_after'],
      ['page=2', 'page'],
      ['filter[status]=paid', 'filter[status]'],
    ];
    for (const [query, parameter] of cases) {
      const res = await carol.request('GET', `/v1/orders?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.code).toBe('ERR_INVALID_PARAMETER');
      expect(res.body.errors[0].parameter).toBe(parameter);
    }
  });

  it('refuses dates PostgreSQL cannot hold, and dates that do not exist, with 400 naming the parameter', async () => {
    const hana = service.newCustomer();
    const invoices = `/v1/customers/${hana.principal.customerId}/invoices`;
    const cases: [string, string][] = [
      // Year 0 (1 BC), directly or once the offset is applied: PostgreSQL has no year 0.
      // (%2B is `+`: a bare `+` in a query string is a space.)
      ['/v1/orders?created_after=0000-01-01T00:00:00Z', 'created_after'],
      [`${invoices}?issued_before=0001-01-01T00:00:00%2B14:00`, 'issued_before'],
      // Past 9999 once the offset is applied: not RFC 3339, and not what the client meant.
      ['/v1/orders?created_before=9999-12-31T23:59:59-14:00', 'created_before'],
      [`${invoices}?issued_after=0000-06-15T12:00:00Z`, 'issued_after'],
      // Calendar and clock values that do not exist are not silently moved to others.
      ['/v1/orders?created_after=2026-02-30T00:00:00Z', 'created_after'],
      ['/v1/orders?created_after=2026-01-01T24:00:00Z', 'created_after'],
      ['/v1/orders?created_after=2026-01-01T00:00:00%2B24:00', 'created_after'],
    ];
    for (const [path, parameter] of cases) {
      const res = await hana.request('GET', path);
      expect(res.status, path).toBe(400);
      expect(res.body.code, path).toBe('ERR_INVALID_PARAMETER');
      expect(res.body.errors[0].parameter, path).toBe(parameter);
    }
    // The edges of the range are valid dates, and answer.
    for (const path of [
      '/v1/orders?created_after=0001-01-01T00:00:00Z',
      '/v1/orders?created_before=9999-12-31T23:59:59.999Z',
      `${invoices}?issued_before=0001-01-01T14:00:00%2B14:00`,
      '/v1/orders?created_after=2024-02-29T23:59:59-23:59',
    ]) {
      expect((await hana.request('GET', path)).status, path).toBe(200);
    }
  });

  it('a tampered cursor, or one from another query or customer, is 400', async () => {
    const dave = service.newCustomer();
    const erin = service.newCustomer();
    await seedOrders(dave, 5);
    await seedOrders(erin, 5);
    const first = await dave.request('GET', '/v1/orders?limit=2');
    const cursor = first.body.next_cursor as string;
    expect((await dave.request('GET', `/v1/orders?limit=2&cursor=${cursor}`)).status).toBe(200);

    const [payload, tag] = cursor.split('.') as [string, string];
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const moved = Buffer.from(JSON.stringify(['1970-01-01T00:00:00.000Z', decoded[1]])).toString('base64url');
    const attempts = [
      await dave.request('GET', `/v1/orders?limit=2&cursor=${moved}.${tag}`),
      await dave.request('GET', `/v1/orders?limit=2&cursor=${cursor}&status=paid`),
      await dave.request('GET', `/v1/orders?limit=2&sort=created_at&cursor=${cursor}`),
      await erin.request('GET', `/v1/orders?limit=2&cursor=${cursor}`),
      await dave.request('GET', `/v1/orders?cursor=garbage`),
    ];
    for (const res of attempts) {
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('ERR_INVALID_CURSOR');
    }
  });

  it('list ETags change when a listed order changes, and 304 otherwise', async () => {
    const frank = service.newCustomer();
    const created = await frank.request('POST', '/v1/orders', { body: SAMPLE_ORDER });
    const list = await frank.request('GET', '/v1/orders');
    const etag = list.headers.get('etag') ?? '';
    expect((await frank.request('GET', '/v1/orders', { headers: { 'if-none-match': etag } })).status).toBe(
      304,
    );
    await frank.request('PATCH', `/v1/orders/${created.body.id}`, { body: { status: 'cancelled' } });
    const changed = await frank.request('GET', '/v1/orders', { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.body.data[0].status).toBe('cancelled');
  });

  it('invoice lists page with their own sort and filters', async () => {
    const gina = service.newCustomer();
    for (let i = 0; i < 5; i++) {
      const order = (await gina.request('POST', '/v1/orders', { body: SAMPLE_ORDER })).body;
      await gina.request('POST', '/v1/payments', { body: { order_id: order.id, amount: 2500 } });
    }
    const path = `/v1/customers/${gina.principal.customerId}/invoices`;
    const { seen } = await pageThrough(gina, `${path}?limit=2&sort=issued_at`);
    expect(seen).toHaveLength(5);
    expect((await gina.request('GET', `${path}?sort=created_at`)).status).toBe(400);
    expect((await gina.request('GET', `${path}?status=void`)).body.data).toEqual([]);
  });
});
