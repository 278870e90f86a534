/**
 * The soak's traffic: lanes of paced workers, each worker one request (or two) at a time, so
 * the rate and the requests in flight are both bounded by the LANES table. Every request
 * names the statuses it may get, as tight as what the soak knows allows: a read of an order
 * is 200 or 429, If-None-Match with a never-changed order's ETag is 304 or 429, paying a
 * pending order is 201 or 429 and paying a paid one 409 or 429.
 */
import { randomUUID } from 'node:crypto';
import { parseJson, type Answer, type SoakClient } from './client.ts';
import { forget, idleOrder, pick, remember, type Customer, type KnownOrder } from './fleet.ts';
import type { Kind } from './tally.ts';

export interface TrafficDeps {
  client: SoakClient;
  /** Sends from its own source address: its failed authentications are counted apart. */
  strangerClient: SoakClient;
  customers: Customer[];
  hammer: Customer;
  badCredentials: string[];
}

type Step = (deps: TrafficDeps) => Promise<void>;

interface Lane {
  name: Kind;
  workers: number;
  /** Steps per second of one worker, at most (a slow answer lowers it, never raises it). */
  perSecond: number;
  step: Step;
}

interface OrderBody {
  id?: unknown;
  customer_id?: unknown;
  status?: unknown;
  total?: unknown;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** 1 to 3 items, and their total as the service must compute it. */
function randomItems(): { items: { sku: string; quantity: number; unit_price: number }[]; total: number } {
  const items = Array.from({ length: 1 + Math.floor(Math.random() * 3) }, (_, i) => ({
    sku: `SKU-${i + 1}`,
    quantity: 1 + Math.floor(Math.random() * 5),
    unit_price: 100 * (1 + Math.floor(Math.random() * 50)),
  }));
  return { items, total: items.reduce((sum, item) => sum + item.quantity * item.unit_price, 0) };
}

function etagOf(answer: Answer): string {
  const value = answer.headers['etag'];
  return typeof value === 'string' ? value : '';
}

/** An order as the service answered it: its owner, status and total must be the expected ones. */
function wrongOrder(answer: Answer, customer: Customer, status: string, total: number): string | undefined {
  const body = parseJson(answer) as OrderBody | undefined;
  if (body?.customer_id !== customer.id) return 'order of another customer';
  if (body.status !== status) return `status ${String(body.status)}, expected ${status}`;
  if (body.total !== total) return 'wrong total';
  return undefined;
}

async function read(deps: TrafficDeps): Promise<void> {
  const customer = pick(deps.customers)!;
  const order = pick(customer.orders);
  if (order === undefined) return;
  const sent = { version: order.version, busy: order.busy };
  await deps.client.send({
    kind: 'read',
    method: 'GET',
    path: `/v1/orders/${order.id}`,
    headers: { authorization: customer.bearer },
    expect: [200, 429],
    check: (answer) => {
      if (answer.status !== 200) return undefined;
      if ((parseJson(answer) as OrderBody | undefined)?.id !== order.id) return 'another order';
      // Only an order that nothing changed while the read was on its way has one right answer.
      if (sent.busy || order.busy || sent.version !== order.version) return undefined;
      const wrong = wrongOrder(answer, customer, order.status, order.total);
      if (wrong !== undefined) return `stale read: ${wrong}`;
      if (order.etag !== '' && etagOf(answer) !== order.etag) return 'stale read: ETag';
      return undefined;
    },
  });
}

async function list(deps: TrafficDeps): Promise<void> {
  const customer = pick(deps.customers)!;
  const query = pick(['limit=20', 'limit=10&status=pending', 'limit=20&sort=created_at'])!;
  const ownItems = (answer: Answer) => {
    if (answer.status !== 200) return undefined;
    const page = parseJson(answer) as { data?: OrderBody[] } | undefined;
    if (!Array.isArray(page?.data)) return 'no data array';
    return page.data.every((item) => item.customer_id === customer.id)
      ? undefined
      : 'order of another customer';
  };
  const headers = { authorization: customer.bearer };
  const first = await deps.client.send({
    kind: 'list',
    method: 'GET',
    path: `/v1/orders?${query}`,
    headers,
    expect: [200, 429],
    check: ownItems,
  });
  const next = first?.status === 200 ? (parseJson(first) as { next_cursor?: unknown }).next_cursor : null;
  // A third of the pages with a next one are followed, with the cursor the service issued.
  if (typeof next !== 'string' || Math.random() > 1 / 3) return;
  await deps.client.send({
    kind: 'list',
    method: 'GET',
    path: `/v1/orders?${query}&cursor=${encodeURIComponent(next)}`,
    headers,
    expect: [200, 429],
    check: ownItems,
  });
}

async function conditional(deps: TrafficDeps): Promise<void> {
  const customer = pick(deps.customers)!;
  const order = pick(customer.orders.filter((o) => o.stable));
  if (order === undefined) return;
  await deps.client.send({
    kind: 'conditional',
    method: 'GET',
    path: `/v1/orders/${order.id}`,
    headers: { authorization: customer.bearer, 'if-none-match': order.etag },
    expect: [304, 429],
  });
}

/** Creates an order (201), or gets 429; undefined on anything else. */
export async function createOrder(
  deps: TrafficDeps,
  customer: Customer,
  options: { stable: boolean; replayChance: number },
): Promise<KnownOrder | undefined> {
  const { items, total } = randomItems();
  const body = JSON.stringify({ items, currency: 'EUR' });
  const headers = {
    authorization: customer.bearer,
    'content-type': 'application/json',
    'idempotency-key': randomUUID(),
  };
  const created = await deps.client.send({
    kind: 'create',
    method: 'POST',
    path: '/v1/orders',
    headers,
    body,
    expect: [201, 429],
    check: (answer) => (answer.status === 201 ? wrongOrder(answer, customer, 'pending', total) : undefined),
  });
  if (created?.status !== 201) return undefined;
  const id = String((parseJson(created) as OrderBody).id);
  const order: KnownOrder = {
    id,
    status: 'pending',
    total,
    etag: etagOf(created),
    version: 0,
    busy: false,
    stable: options.stable,
  };
  remember(customer, order);
  if (Math.random() >= options.replayChance) return order;
  // The same key and body again, as a client retrying after a lost answer: the first answer.
  await deps.client.send({
    kind: 'replay',
    method: 'POST',
    path: '/v1/orders',
    headers,
    body,
    expect: [201, 429],
    check: (answer) => {
      if (answer.status !== 201) return undefined;
      if ((parseJson(answer) as OrderBody | undefined)?.id !== id) return 'another order created';
      return answer.headers['idempotent-replayed'] === 'true' ? undefined : 'no Idempotent-Replayed';
    },
  });
  return order;
}

async function create(deps: TrafficDeps): Promise<void> {
  await createOrder(deps, pick(deps.customers)!, { stable: false, replayChance: 0.2 });
}

async function patch(deps: TrafficDeps): Promise<void> {
  const customer = pick(deps.customers)!;
  const order = idleOrder(customer, ['pending']);
  if (order === undefined) return;
  const cancel = Math.random() < 0.25;
  const change = randomItems();
  const expected = cancel
    ? { status: 'cancelled' as const, total: order.total }
    : { status: order.status, total: change.total };
  order.busy = true;
  try {
    const answer = await deps.client.send({
      kind: 'patch',
      method: 'PATCH',
      path: `/v1/orders/${order.id}`,
      headers: { authorization: customer.bearer, 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify(cancel ? { status: 'cancelled' } : { items: change.items }),
      expect: [200, 429],
      check: (a) => (a.status === 200 ? wrongOrder(a, customer, expected.status, expected.total) : undefined),
    });
    if (answer === undefined) forget(customer, order);
    else if (answer.status === 200) {
      Object.assign(order, expected, { etag: etagOf(answer), version: order.version + 1 });
    }
  } finally {
    order.busy = false;
  }
}

async function pay(deps: TrafficDeps): Promise<void> {
  const customer = pick(deps.customers)!;
  // One payment in ten is for an order already paid: the service must refuse it (409).
  const again = Math.random() < 0.1;
  const order = idleOrder(customer, again ? ['paid'] : ['pending']);
  if (order === undefined) return;
  order.busy = true;
  try {
    const answer = await deps.client.send({
      kind: 'pay',
      method: 'POST',
      path: '/v1/payments',
      headers: {
        authorization: customer.bearer,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify({ order_id: order.id, amount: order.total }),
      expect: again ? [409, 429] : [201, 429],
      check: (a) => {
        if (a.status !== 201) return undefined;
        const body = parseJson(a) as { order_id?: unknown; amount?: unknown } | undefined;
        return body?.order_id === order.id && body.amount === order.total ? undefined : 'another payment';
      },
    });
    if (answer === undefined) forget(customer, order);
    // Paying changes the order's version; its new ETag is not in the payment's answer.
    else if (answer.status === 201)
      Object.assign(order, { status: 'paid', etag: '', version: order.version + 1 });
  } finally {
    order.busy = false;
  }
}

async function hammer(deps: TrafficDeps): Promise<void> {
  await deps.client.send({
    kind: 'hammer',
    method: 'GET',
    path: pick(['/v1/users/me', '/v1/orders?limit=5'])!,
    headers: { authorization: deps.hammer.bearer },
    expect: [200, 429],
  });
}

async function badToken(deps: TrafficDeps): Promise<void> {
  await deps.strangerClient.send({
    kind: 'bad-token',
    method: 'GET',
    path: pick(['/v1/orders', '/v1/users/me'])!,
    headers: { authorization: pick(deps.badCredentials)! },
    // 429 once the address is over the failed-authentication throttle.
    expect: [401, 429],
  });
}

/** The mix: about 185 requests/s from 15 workers, 15 requests in flight at most. */
export const LANES: readonly Lane[] = [
  { name: 'read', workers: 4, perSecond: 15, step: read },
  { name: 'list', workers: 2, perSecond: 8, step: list },
  { name: 'conditional', workers: 2, perSecond: 15, step: conditional },
  { name: 'create', workers: 2, perSecond: 5, step: create },
  { name: 'patch', workers: 1, perSecond: 5, step: patch },
  { name: 'pay', workers: 1, perSecond: 5, step: pay },
  { name: 'hammer', workers: 2, perSecond: 25, step: hammer },
  { name: 'bad-token', workers: 1, perSecond: 3, step: badToken },
];

/** One worker: paced steps until the deadline or a stop, never more than the lane's share. */
async function worker(
  lane: Lane,
  deps: TrafficDeps,
  deadline: number,
  stopped: () => boolean,
): Promise<void> {
  const periodMs = 1000 / lane.perSecond;
  const maxSteps = Math.ceil(((deadline - performance.now()) / 1000) * lane.perSecond) + 1;
  // Workers start spread over one period, so the lanes do not fire in lockstep.
  await sleep(Math.random() * periodMs);
  for (let i = 0; i < maxSteps && performance.now() < deadline && !stopped(); i++) {
    const started = performance.now();
    await lane.step(deps);
    await sleep(Math.min(periodMs - (performance.now() - started), deadline - performance.now()));
  }
}

/** Runs every lane until `deadline` (performance.now() time); resolves when all have ended. */
export async function runTraffic(deps: TrafficDeps, deadline: number, stopped: () => boolean): Promise<void> {
  const workers = LANES.flatMap((lane) =>
    Array.from({ length: lane.workers }, () => worker(lane, deps, deadline, stopped)),
  );
  await Promise.all(workers);
}
