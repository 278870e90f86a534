/**
 * Memory per cached byte, for the capacity model (docs/performance.md):
 *
 *   node --expose-gc measure/cache-memory.ts [ENTRIES] [BODY_BYTES]
 *
 * Stores ENTRIES (20000) answers of BODY_BYTES (the bench's order, 214 bytes) in the gateway's
 * own cache engine, in this process, as the bench's cache-hit row has them stored (per
 * customer, Portico-Cache-Control: max-age), and prints what the V8 heap, the buffers outside
 * it and the resident set grew by: per entry, and per stored body byte, beside the bytes the
 * cache charges each entry against `cache.maxBytes`. Asserts nothing.
 */
import { pino } from 'pino';
import { createHttpCache } from '../gateway/cache/engine/http-cache.ts';
import { describeRequest } from '../gateway/cache/rules/cache-request.ts';
import { parseConfig } from '../gateway/config/load.ts';
import { STATIC_BODY } from './bench/static-answer.ts';
import { answerHelp, usageError } from '../scripts/cli-args.ts';

const USAGE = 'usage: node --expose-gc measure/cache-memory.ts [ENTRIES] [BODY_BYTES]';
answerHelp(
  `${USAGE}\n\nStores ENTRIES answers in the gateway's cache engine, in this process, and prints the memory\nthey take per entry and per stored body byte. Asserts nothing.`,
);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) usageError('cache-memory', USAGE, 'run with node --expose-gc');
const entries = Number(process.argv[2] ?? 20_000);
const bodyBytes = Number(process.argv[3] ?? STATIC_BODY.length);
if (!(entries > 0 && bodyBytes > 0))
  usageError('cache-memory', USAGE, 'ENTRIES and BODY_BYTES are positive numbers');

const { config } = parseConfig({}, { env: {} });
// Room for every entry: the figure is what stored entries cost, not what eviction keeps.
const cache = createHttpCache(
  { ...config.cache, maxBytes: entries * (bodyBytes + 4096), maxOwnerShare: 1 },
  { channel: 'cache-memory', log: pino({ level: 'silent' }) },
);

function memory() {
  gc!();
  gc!();
  const usage = process.memoryUsage();
  // `external` includes the ArrayBuffers of Buffers (`arrayBuffers` is a part of it, not more).
  return { heap: usage.heapUsed, committed: usage.heapTotal, outside: usage.external, rss: usage.rss };
}

function store(i: number): boolean {
  const target = `/v1/orders/${i.toString(16).padStart(8, '0')}-5d1a-4c8e-9f7b-2a6d4e8c1f30`;
  const request = describeRequest({
    method: 'GET',
    target,
    path: target,
    authority: '127.0.0.1:8443',
    headers: { host: '127.0.0.1:8443', authorization: 'Bearer x', 'user-agent': 'bench' },
    principal: { subject: 'bench-user', customerId: 'cus_bench', scopes: ['orders:read'], authMethod: 'jwt' },
  });
  // A fresh buffer per entry, as each answer read from an upstream socket is.
  const body = Buffer.alloc(bodyBytes, 0x61);
  const insertion = cache.insert(request, cache.openFill(target), {
    status: 200,
    headers: {
      'content-type': 'application/json',
      'content-length': String(bodyBytes),
      etag: `"${i}-1"`,
      'last-modified': 'Mon, 23 Nov 2026 09:00:00 GMT',
      date: new Date().toUTCString(),
      'cache-control': 'private, no-cache',
      'portico-cache-control': 'max-age=30',
    },
  });
  return insertion.store && insertion.commit(body);
}

const before = memory();
let stored = 0;
for (let i = 0; i < entries; i++) if (store(i)) stored++;
const after = memory();
if (stored === 0) throw new Error('no answer was stored: the figures would mean nothing');
const per = (bytes: number) =>
  `${(bytes / stored).toFixed(0)} B per entry, ${(bytes / stored / bodyBytes).toFixed(2)} per body byte`;
console.log(
  `cache-memory: ${stored} of ${entries} answers of ${bodyBytes} body bytes stored (node ${process.version})`,
);
console.log(`  V8 heap      ${per(after.heap - before.heap)}`);
console.log(`  V8 heap committed ${per(after.committed - before.committed)}`);
console.log(`  buffers      ${per(after.outside - before.outside)}`);
console.log(`  resident set ${per(after.rss - before.rss)}`);
console.log(`  charged      ${per(cache.stats().bytes)} (against cache.maxBytes: entrySize, entry-store.ts)`);
