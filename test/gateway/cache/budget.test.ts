/**
 * One caller cannot flush the cache of everyone else: an anonymous client varying the query
 * string of a public route, or a customer varying its own list queries, fills its own share of
 * the cache (cache.maxOwnerShare) and then evicts its own least recently used entries, never
 * another customer's. Over real sockets, through the whole pipeline.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClock, startCacheGateway, type CacheGateway } from './support/cache-gateway.ts';
import { startOrigin, type TestOrigin } from './support/origin.ts';

const BODY = 'x'.repeat(20 * 1024);
const MAX_BYTES = 1024 * 1024;
const as = (customer: string) => ({ authorization: `Test ${customer} orders:read` });
const HIT = /^Portico; hit/;

let origin: TestOrigin;
let gateway: CacheGateway;

beforeEach(async () => {
  // `/v1/public...`: any caller may have it. `/v1/mine...`: the customer's own, kept for it alone.
  origin = await startOrigin((request) =>
    request.path === '/v1/public'
      ? { headers: { 'cache-control': 'public, max-age=600' }, body: BODY }
      : {
          headers: { 'cache-control': 'private', 'portico-cache-control': 'max-age=600' },
          body: `${request.customer ?? 'nobody'}:${BODY}`,
        },
  );
  gateway = await startCacheGateway({
    upstream: origin.url,
    clock: createClock(),
    cache: { maxBytes: MAX_BYTES, maxOwnerShare: 0.25 },
  });
});

afterEach(async () => {
  await gateway.close();
  await origin.close();
});

/** Stores one entry for a customer, checked to be a hit now. */
async function victimEntry(customer: string): Promise<string> {
  const path = '/v1/mine';
  await gateway.get(path, as(customer));
  expect((await gateway.get(path, as(customer))).headers['cache-status']).toMatch(HIT);
  return path;
}

describe('a byte budget per owner of entries', () => {
  it('an anonymous flood of ?flush=N on a public route evicts no customer entry', async () => {
    const victim = await victimEntry('cust-victim');
    for (let n = 0; n < 100; n++) expect((await gateway.get(`/v1/public?flush=${n}`)).status).toBe(200);

    expect((await gateway.get(victim, as('cust-victim'))).headers['cache-status']).toMatch(HIT);
    // The flood evicted its own oldest entries, within its share.
    expect((await gateway.get('/v1/public?flush=99')).headers['cache-status']).toMatch(HIT);
    expect((await gateway.get('/v1/public?flush=0')).headers['cache-status']).toMatch(/fwd=uri-miss/);
    expect(gateway.cache.stats().bytes).toBeLessThanOrEqual(MAX_BYTES);
  });

  it("one customer's flood of its own queries evicts neither another customer's entry nor public ones", async () => {
    const victim = await victimEntry('cust-victim');
    await gateway.get('/v1/public');
    for (let n = 0; n < 100; n++) await gateway.get(`/v1/mine?created_after=${n}`, as('cust-flood'));

    expect((await gateway.get(victim, as('cust-victim'))).headers['cache-status']).toMatch(HIT);
    expect((await gateway.get('/v1/public')).headers['cache-status']).toMatch(HIT);
  });

  it("counts a customer's entries under every scope set together", async () => {
    const victim = await victimEntry('cust-victim');
    const scopeSets = ['orders:read', 'orders:write', 'invoices:read', 'orders:read,invoices:read'];
    for (let n = 0; n < 100; n++) {
      const scopes = scopeSets[n % scopeSets.length] ?? '';
      await gateway.get(`/v1/mine?n=${n}`, { authorization: `Test cust-flood ${scopes}` });
    }
    expect((await gateway.get(victim, as('cust-victim'))).headers['cache-status']).toMatch(HIT);
  });
});
