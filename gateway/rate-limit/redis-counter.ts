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
 *
 * In a Redis Cluster a script may touch the keys of one slot only, so there a batch is split
 * by hash tag (the limiter tags each policy's keys with the policy: one call per policy and
 * turn). Keys without a tag each go alone.
 */
import { isCluster, type RedisClient } from '../../shared/redis.ts';

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

type CountingRedis = RedisClient & {
  [COMMAND](keys: number, ...args: (string | number)[]): Promise<number[]>;
};

/**
 * What Redis Cluster hashes to pick a key's slot: the text inside the first `{...}` when it
 * is not empty, else the whole key. Keys with the same hashed text share a slot.
 */
export function hashedPart(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  return close === -1 || close === open + 1 ? key : key.slice(open + 1, close);
}

/** The batch as one group, or in a cluster one group per hash tag (prefix included). */
function bySlot(batch: Pending[], prefix: string | undefined): Pending[][] {
  if (prefix === undefined) return [batch];
  const groups = new Map<string, Pending[]>();
  for (const entry of batch) {
    const part = hashedPart(prefix + entry.key);
    const group = groups.get(part);
    if (group === undefined) groups.set(part, [entry]);
    else group.push(entry);
  }
  return [...groups.values()];
}

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis Cluster did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

export function createRedisCounter(redis: RedisClient): RedisCounter {
  const client = redis as CountingRedis;
  // ioredis sends EVALSHA, and the script itself once Redis says NOSCRIPT; it prefixes KEYS.
  if (typeof client[COMMAND] !== 'function') redis.defineCommand(COMMAND, { lua: SCRIPT });
  // ioredis prefixes the keys before the cluster hashes them: the prefix can hold a tag too.
  const clusterPrefix = isCluster(redis) ? (redis.options.keyPrefix ?? '') : undefined;
  // A cluster client retries a command whose master died (until the slots are re-read), past
  // the per-node command timeout: the batch gets that timeout as its own deadline.
  const deadlineMs = isCluster(redis) ? redis.options.redisOptions?.commandTimeout : undefined;
  // Each call is a whole turn's batch already, so it goes out on its own rather than through
  // ioredis's auto-pipeline. That pipeline would add a Pipeline object, a nextTick and a
  // callback adapter per call, and it holds new calls back while one is in flight. Bypassing
  // it cut the gateway's CPU by 6-13% per proxied request and ~20% per cache hit (bench,
  // before and after in one run); holding calls back ourselves while one is out measured no
  // better. In a cluster it is needed besides: ioredis picks a cluster's auto-pipeline by a
  // script's first argument, here the key count, not its first key (ioredis issue #2109), so
  // calls for two slots could share a pipeline and fail.
  const ignored = (redis.options.autoPipeliningIgnoredCommands ??= []);
  if (!ignored.includes(COMMAND)) ignored.push(COMMAND);
  let pending: Pending[] = [];

  function flush(): void {
    const batch = pending;
    pending = [];
    for (const group of bySlot(batch, clusterPrefix)) send(group);
  }

  function send(batch: Pending[]): void {
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
    if (deadlineMs !== undefined) reply = withDeadline(reply, deadlineMs);
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
