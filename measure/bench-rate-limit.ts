/**
 * CPU cost of the rate-limit check per request, in this process: memory store and Redis
 * (REDIS_URL or 127.0.0.1:6379), one and two matching policies. Prints figures; asserts nothing.
 *
 *   node measure/bench-rate-limit.ts [requests=20000]
 */
import { randomUUID } from 'node:crypto';
import { createRedisClient, waitForRedis } from '../shared/redis.ts';
import { DEFAULT_RATE_LIMITS } from '../gateway/config/schema/rate-limit.ts';
import type { RateLimitsConfig } from '../gateway/config/schema/rate-limit.ts';
import { createRateLimiter } from '../gateway/rate-limit/limiter.ts';
import type { RateLimiter } from '../gateway/rate-limit/limiter.ts';

const total = Number(process.argv[2] ?? 20000);
const subject = {
  method: 'POST',
  path: '/v1/orders',
  clientIp: '192.0.2.1',
  principal: { subject: 'u1', customerId: 'c1', scopes: [], authMethod: 'jwt' as const },
};
const one: RateLimitsConfig = {
  ...DEFAULT_RATE_LIMITS,
  policies: [{ name: 'default', key: 'principal', limit: 1_000_000_000, window: '60s' }],
};
const two: RateLimitsConfig = {
  ...one,
  policies: [
    ...one.policies,
    {
      name: 'writes',
      key: 'customer',
      limit: 1_000_000_000,
      window: '60s',
      match: { methods: ['POST'], path: '/v1/orders' },
    },
  ],
};

/** CPU-µs per check, with `concurrency` checks in flight as a loaded gateway would have. */
async function measure(limiter: RateLimiter, concurrency = 16): Promise<number> {
  for (let i = 0; i < 1000; i++) await limiter.check(subject); // warm-up
  let next = 0;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) await limiter.check(subject);
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / total;
}

const redis = createRedisClient({
  url: process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379',
  keyPrefix: `portico-bench:${randomUUID()}:`,
});
if (!(await waitForRedis(redis, 2000))) {
  console.error('bench-rate-limit: Redis does not answer (set REDIS_URL or start one on 127.0.0.1:6379)');
  process.exit(1);
}
/** One limiter measured, then closed: its fleet heartbeat and subscription would keep the process up. */
async function measureClosing(limiter: RateLimiter): Promise<number> {
  try {
    return await measure(limiter);
  } finally {
    await limiter.close();
  }
}
const rows = [
  ['memory, 1 policy', await measureClosing(createRateLimiter(one, {}))],
  ['memory, 2 policies', await measureClosing(createRateLimiter(two, {}))],
  ['redis, 1 policy', await measureClosing(createRateLimiter(one, { redis }))],
  ['redis, 2 policies', await measureClosing(createRateLimiter(two, { redis }))],
] as const;
console.log(`rate-limit check, ${total} requests, node ${process.version}`);
for (const [name, micros] of rows)
  console.log(`  ${name.padEnd(20)} ${micros.toFixed(1).padStart(6)} CPU-µs per request`);
// Remove this run's counters. KEYS patterns are not prefixed by ioredis; DEL arguments are.
const prefix = redis.options.keyPrefix ?? '';
const keys = await redis.keys(`${prefix}*`);
if (keys.length > 0) await redis.del(...keys.map((k) => k.slice(prefix.length)));
redis.disconnect();
