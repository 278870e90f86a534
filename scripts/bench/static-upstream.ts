/**
 * The cost ladder's upstream: one fixed JSON answer (the size of an order) to any request,
 * prepared once, so that every rung of the ladder and the peer next to it relay exactly the
 * same bytes, and the upstream's own cost stays off the measured CPU.
 *
 *   node scripts/bench/static-upstream.ts PORT
 */
import { createServer } from 'node:http';

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
const BODY = Buffer.from(JSON.stringify(ORDER));
const HEADERS = {
  'content-type': 'application/json',
  'content-length': String(BODY.length),
  'cache-control': 'private, no-cache',
  etag: '"bench-static-1"',
};

const server = createServer((req, res) => {
  // Read whatever was sent, then answer; keep-alive stays usable.
  req.resume();
  req.on('end', () => {
    res.writeHead(200, HEADERS);
    res.end(BODY);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2]), '127.0.0.1');
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
});
