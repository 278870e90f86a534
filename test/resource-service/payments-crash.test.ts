/**
 * The service is SIGKILLed while payments are half-way through their transactions: nothing
 * partial is stored, and after a restart every payment, retried with its Idempotency-Key,
 * completes exactly once.
 *
 * To land the kill mid-transaction for certain, the test locks the invoices table from its
 * own connection: each payment then has taken its idempotency lock, locked its order and
 * inserted its payment row, and waits to insert the invoice when the process dies.
 */
import postgres from 'postgres';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../shared/principal.ts';
import { createScratchDatabase } from '../support/databases.ts';
import type { ScratchDatabase } from '../support/databases.ts';
import { SAMPLE_ORDER } from '../support/service.ts';
import { customer, signedClient, sleep, waitFor } from './fault-client.ts';
import type { Outcome } from './fault-client.ts';
import { newAssertionKey, spawnService } from './service-process.ts';
import type { ServiceChild } from './service-process.ts';

const CUSTOMERS = 4;
const ORDERS_PER_CUSTOMER = 10;
/** Orders paid before the crash, per customer: their retries must be replays. */
const PAID_BEFORE = 2;
/** Payments caught between their payment row and their invoice when the process dies. */
const BLOCKED = 15;

let database: ScratchDatabase;
let sql: Sql;
const services: ServiceChild[] = [];

beforeAll(async () => {
  database = await createScratchDatabase();
  sql = postgres(database.url, { max: 3, onnotice: () => {} });
});

afterAll(async () => {
  await Promise.all(services.map((s) => s.kill('SIGKILL')));
  await sql?.end({ timeout: 1 });
  await database?.drop();
});

interface Payment {
  owner: Principal;
  orderId: string;
  key: string;
  first?: Outcome;
}

function pay(service: ServiceChild, payment: Payment): Promise<Outcome> {
  return signedClient(service.url, service.key)(payment.owner, 'POST', '/v1/payments', {
    body: { order_id: payment.orderId, amount: 2500 },
    headers: { 'idempotency-key': payment.key },
    timeoutMs: 20_000,
  });
}

/** A retry as a client would do it: again while the first attempt is still in flight (409). */
async function payUntilDone(service: ServiceChild, payment: Payment): Promise<Outcome> {
  for (let attempt = 1; ; attempt++) {
    const outcome = await pay(service, payment);
    if (outcome.status !== 409 || outcome.body?.code !== 'ERR_IDEMPOTENCY_IN_FLIGHT' || attempt === 20) {
      return outcome;
    }
    await sleep(Number(outcome.headers?.['retry-after'] ?? 1) * 200);
  }
}

async function orderStates() {
  return sql<{ id: string; status: string; payments: number; invoices: number; records: number }[]>`
    select o.id, o.status,
      (select count(*)::int from payments p where p.order_id = o.id) as payments,
      (select count(*)::int from invoices i where i.order_id = o.id) as invoices,
      (select count(*)::int from idempotency_records r
        where r.customer_id = o.customer_id and r.response_body->>'order_id' = o.id::text) as records
    from orders o`;
}

async function createOrders(service: ServiceChild): Promise<Payment[]> {
  const client = signedClient(service.url, service.key);
  const payments: Payment[] = [];
  for (let c = 0; c < CUSTOMERS; c++) {
    const owner = customer('crash');
    for (let o = 0; o < ORDERS_PER_CUSTOMER; o++) {
      const created = await client(owner, 'POST', '/v1/orders', { body: SAMPLE_ORDER });
      expect(created.status).toBe(201);
      payments.push({ owner, orderId: created.body.id, key: `pay-${created.body.id}` });
    }
  }
  return payments;
}

describe('SIGKILL of the service in the middle of payments', () => {
  it('leaves no partial write, and a retry with the same key completes each payment exactly once', async () => {
    const first = await spawnService({
      databaseUrl: database.url,
      key: newAssertionKey(),
      env: { DATABASE_POOL_MAX: '20' },
    });
    services.push(first);
    const payments = await createOrders(first);
    const before = payments.filter((_, i) => i % ORDERS_PER_CUSTOMER < PAID_BEFORE);
    const during = payments.filter((p) => !before.includes(p));
    for (const payment of before) {
      payment.first = await pay(first, payment);
      expect(payment.first.status).toBe(201);
    }

    const locker = await sql.reserve();
    await locker`begin`;
    await locker`lock table invoices in exclusive mode`;
    const inFlight = during.map((payment) => pay(first, payment));
    // Twins with the same key, sent at the same time, as an impatient client would.
    const twins = during.slice(0, 5).map((payment) => pay(first, payment));
    const waitingOnInvoices = async () => {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and application_name = 'portico-resource-service'
          and wait_event_type = 'Lock' and query like '%insert into invoices%'`;
      return (row?.n ?? 0) >= BLOCKED;
    };
    // Well within the service's 5 s statement timeout, which would otherwise answer 503.
    await waitFor(waitingOnInvoices, 4000, 'payments blocked at the invoice insert');
    expect((await first.kill('SIGKILL')).signal).toBe('SIGKILL');
    await locker`rollback`;
    locker.release();

    const answered = await Promise.all([...inFlight, ...twins]);
    // Cut off mid-transaction: no answer at all, or an in-flight refusal for a twin.
    for (const outcome of answered) {
      if (outcome.status !== undefined) expect(outcome.status).toBe(409);
    }
    // The killed process's backends notice the closed socket and roll back.
    await waitFor(
      async () =>
        (
          await sql`select 1 from pg_stat_activity
                    where datname = current_database() and application_name = 'portico-resource-service'`
        ).length === 0,
      10_000,
      'the dead service’s sessions to end',
    );

    const afterCrash = new Map((await orderStates()).map((row) => [row.id, row]));
    for (const payment of before) {
      expect(afterCrash.get(payment.orderId)).toEqual({
        id: payment.orderId,
        status: 'paid',
        payments: 1,
        invoices: 1,
        records: 1,
      });
    }
    for (const payment of during) {
      expect(afterCrash.get(payment.orderId)).toEqual({
        id: payment.orderId,
        status: 'pending',
        payments: 0,
        invoices: 0,
        records: 0,
      });
    }

    const second = await spawnService({ databaseUrl: database.url, key: first.key });
    services.push(second);
    const retried = await Promise.all(payments.map((payment) => payUntilDone(second, payment)));
    retried.forEach((outcome, i) => {
      const payment = payments[i] as Payment;
      expect(outcome.status).toBe(201);
      expect(outcome.body.order_id).toBe(payment.orderId);
      if (payment.first !== undefined) {
        expect(outcome.headers?.['idempotent-replayed']).toBe('true');
        expect(outcome.body).toEqual(payment.first.body);
      } else {
        expect(outcome.headers?.['idempotent-replayed']).toBeUndefined();
      }
    });
    // Once more: every payment is now a replay of the one made.
    const again = await Promise.all(payments.map((payment) => pay(second, payment)));
    again.forEach((outcome, i) => {
      expect(outcome.status).toBe(201);
      expect(outcome.headers?.['idempotent-replayed']).toBe('true');
      expect(outcome.body).toEqual(retried[i]?.body);
    });

    const final = await orderStates();
    expect(final).toHaveLength(payments.length);
    for (const row of final)
      expect(row).toMatchObject({ status: 'paid', payments: 1, invoices: 1, records: 1 });
    expect((await second.kill('SIGTERM')).code).toBe(0);
  });
});
