/**
 * Fixed-window counters in Redis, counted in batches: every count asked for in one turn of
 * the event loop goes to Redis as one script call, with one reply. Counting stays atomic and
 * exact per key (the script runs whole inside Redis); what changes is how many requests share
 * a round trip. One call per request was a socket write and a read each (each about as costly
 * as the upstream request itself, on this machine), plus a command object and its promise:
 * together the largest share of the rate-limit stage's CPU in a profile under load.
 *
 * The keys and the arithmetic are rate-limiter-flexible's (RateLimiterRedis): `SET key 0 EX w
 * NX`, `INCRBY key points`, `PTTL key`, so counters written by either are the same counters.
 * A batch's keys may lie in different slots; Redis Cluster would need one call per slot.
 */
import type { Redis } from 'ioredis';

export interface Counted {
  /** The count after this one. */
  consumed: number;
  /** Milliseconds until the window, and so the count, ends. */
  msBeforeNext: number;
}

export interface RedisCounter {
  /** Adds `points` (negative: gives back) to `key`'s window of `windowSeconds`. */
  add(key: string, windowSeconds: number, points: number): Promise<Counted>;
}

const COMMAND = 'porticoCountWindows';
const SCRIPT = `
local out = {}
for i = 1, #KEYS do
  local window = ARGV[2 * i - 1]
  redis.call('set', KEYS[i], 0, 'EX', window, 'NX')
  local consumed = redis.call('incrby', KEYS[i], ARGV[2 * i])
  local ttl = redis.call('pttl', KEYS[i])
  if ttl == -1 then
    redis.call('expire', KEYS[i], window)
    ttl = 1000 * window
  end
  out[2 * i - 1] = consumed
  out[2 * i] = ttl
end
return out`;

interface Pending {
  key: string;
  windowSeconds: number;
  points: number;
  resolve(counted: Counted): void;
  reject(error: unknown): void;
}

type CountingRedis = Redis & { [COMMAND](keys: number, ...args: (string | number)[]): Promise<number[]> };

export function createRedisCounter(redis: Redis): RedisCounter {
  const client = redis as CountingRedis;
  // ioredis sends EVALSHA, and the script itself once Redis says NOSCRIPT; it prefixes KEYS.
  if (typeof client[COMMAND] !== 'function') redis.defineCommand(COMMAND, { lua: SCRIPT });
  let pending: Pending[] = [];

  function flush(): void {
    const batch = pending;
    pending = [];
    const keys = batch.map((entry) => entry.key);
    const args = batch.flatMap((entry) => [entry.windowSeconds, entry.points]);
    const fail = (error: unknown) => {
      for (const entry of batch) entry.reject(error);
    };
    let reply: Promise<number[]>;
    try {
      reply = client[COMMAND](keys.length, ...keys, ...args);
    } catch (error) {
      // Thrown here it would be an uncaught exception in a setImmediate callback.
      fail(error);
      return;
    }
    reply.then((counts) => {
      batch.forEach((entry, index) =>
        entry.resolve({ consumed: Number(counts[2 * index]), msBeforeNext: Number(counts[2 * index + 1]) }),
      );
    }, fail);
  }

  return {
    add(key, windowSeconds, points) {
      return new Promise((resolve, reject) => {
        // setImmediate, not nextTick: it runs after every socket that was readable in this
        // turn has been handled, so the requests that arrived together are counted together.
        if (pending.length === 0) setImmediate(flush);
        pending.push({ key, windowSeconds, points, resolve, reject });
      });
    },
  };
}
