/**
 * The one answer of the cost ladder's static upstream (an order-sized JSON body and its
 * fields), prepared once: the static upstream sends it, and the Node fixed-answer floor sends
 * the same bytes itself, so the floor answers what a cache hit would.
 */
const ORDER = {
  id: '0b9f3c2e-5d1a-4c8e-9f7b-2a6d4e8c1f30',
  customer_id: 'cus_bench',
  status: 'pending',
  currency: 'EUR',
  items: [{ sku: 'SKU-1', quantity: 2, unit_price: 1250 }],
  total: 2500,
  created_at: '2026-11-23T09:00:00.000Z',
  updated_at: '2026-11-23T09:00:00.000Z',
};

export const STATIC_BODY = Buffer.from(JSON.stringify(ORDER));

export const STATIC_HEADERS = {
  'content-type': 'application/json',
  'content-length': String(STATIC_BODY.length),
  'cache-control': 'private, no-cache',
  etag: '"bench-static-1"',
};
