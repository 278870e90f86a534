/**
 * Fixed-window counters in Redis, counted in batches: every count asked for in one turn of
 * the event loop goes to Redis as one script call, with one reply. Counting stays atomic and
 * exact per key (the script runs whole inside Redis); what changes is how many requests share
 * a round trip. One call per request was a socket write and a read each (each about as costly
 * as the upstream request itself, on this machine), plus a command object and its promise:
 * together the largest share of the rate-limit stage's CPU in a profile under load.
 *
 * The keys are rate-limiter-flexible's (RateLimiterRedis): `SET key 0 EX w NX`, `INCRBY key
 * points`, `PTTL key`, so counters written by either are the same counters. One difference:
 * a count that would pass the limit is not added (the reply still says what it would have
 * made, so the caller sees it exceeded): a refused request is charged to no window, and the
 * bound of docs/scaling.md does not erode under a flood of refusals. A give-back (negative
 * points) only lowers a window that still exists, and never below zero.
 *
 * In a Redis Cluster a script may touch the keys of one slot only, so there a batch is split
 * by slot (cluster-slot.ts): one call per slot and turn.
 */
import { isCluster, type RedisClient } from '../../shared/redis.ts';
import { clusterSlot } from './cluster-slot.ts';

export interface Counted {
  /** The count after this one. */
  consumed: number;
  /** Milliseconds until the window, and so the count, ends. */
  msBeforeNext: number;
}

export interface RedisCounter {
  /**
   * Adds `points` to `key`'s window of `windowSeconds` unless the count would pass `limit`
   * (then `consumed` is what it would have been, and nothing is added); negative points give
   * back.
   */
  add(key: string, windowSeconds: number, points: number, limit: number): Promise<Counted>;
}

const COMMAND = 'porticoCountWithinLimits';
// First every counter is checked to be a number, so that a bad one fails the call before any
// count of the batch is added (Redis does not roll back a script that fails half-way). Then
// each entry in order: the counts of one key in one batch see each other.
const SCRIPT = `
for i = 1, #KEYS do
  local value = redis.call('get', KEYS[i])
  if value and not tonumber(value) then
    return redis.error_reply('rate-limit counter ' .. KEYS[i] .. ' is not a number')
  end
end
local out = {}
for i = 1, #KEYS do
  local window = tonumber(ARGV[3 * i - 2])
  local points = tonumber(ARGV[3 * i - 1])
  local limit = tonumber(ARGV[3 * i])
  local current = tonumber(redis.call('get', KEYS[i]) or '0')
  local consumed = current + points
  if points < 0 then
    consumed = current
    if current > 0 then consumed = redis.call('incrby', KEYS[i], math.max(points, -current)) end
  elseif consumed <= limit then
    redis.call('set', KEYS[i], 0, 'EX', window, 'NX')
    consumed = redis.call('incrby', KEYS[i], points)
  end
  local ttl = redis.call('pttl', KEYS[i])
  if ttl == -1 then
    redis.call('expire', KEYS[i], window)
    ttl = 1000 * window
  elseif ttl == -2 then
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
  limit: number;
  resolve(counted: Counted): void;
  reject(error: unknown): void;
}

type CountingRedis = RedisClient & {
  [COMMAND](keys: number, ...args: (string | number)[]): Promise<number[]>;
};

/** The batch as one group, or in a cluster one group per slot (of the key with its prefix). */
function bySlot(batch: Pending[], prefix: string | undefined): Pending[][] {
  if (prefix === undefined) return [batch];
  const groups = new Map<number, Pending[]>();
  for (const entry of batch) {
    const slot = clusterSlot(prefix + entry.key);
    const group = groups.get(slot);
    if (group === undefined) groups.set(slot, [entry]);
    else group.push(entry);
  }
  return [...groups.values()];
}

/**
 * `promise`, or a rejection after `ms`; `onLate` runs when the deadline wins. The deadline is
 * judged after the event loop has read its sockets (a setImmediate after the timer): an answer
 * that arrived while the gateway's own loop was stalled is an answer, not a timeout.
 */
function withDeadline<T>(promise: Promise<T>, ms: number, onLate: () => void): Promise<T> {
  let settled = false;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      setImmediate(() => {
        if (settled) return;
        onLate();
        reject(new Error(`Redis did not answer within ${ms} ms`));
      });
    }, ms);
  });
  return Promise.race([promise, late]).finally(() => {
    settled = true;
    clearTimeout(timer);
  });
}

/**
 * `deadlineMs`: how long a batch may take before its counts fail (the store timeout); by
 * default, in a cluster, the nodes' command timeout, and none of its own on one node (ioredis's
 * command timeout then applies). counting-connection.ts says why the limiter gives one.
 */
export function createRedisCounter(redis: RedisClient, deadlineMs?: number): RedisCounter {
  const client = redis as CountingRedis;
  // ioredis sends EVALSHA, and the script itself once Redis says NOSCRIPT; it prefixes KEYS.
  if (typeof client[COMMAND] !== 'function') redis.defineCommand(COMMAND, { lua: SCRIPT });
  // ioredis prefixes the keys before the cluster hashes them: the prefix can hold a tag too.
  const clusterPrefix = isCluster(redis) ? (redis.options.keyPrefix ?? '') : undefined;
  // A cluster client retries a command whose master died (until the slots are re-read), past
  // the per-node command timeout: the batch gets that timeout as its own deadline.
  deadlineMs ??= isCluster(redis) ? redis.options.redisOptions?.commandTimeout : undefined;
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
    const args = batch.flatMap((entry) => [entry.windowSeconds, entry.points, entry.limit]);
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
    if (deadlineMs !== undefined) {
      // A count reported failed may still land: a cluster client goes on redirecting and
      // retrying a command past the deadline (a slot moving, a master failing over), and any
      // answer may simply come late. The request was decided without it (refused, or counted
      // in memory instead): what it added is given back, or a refusal would be charged after all.
      let late = false;
      const sent = reply;
      reply = withDeadline(sent, deadlineMs, () => (late = true));
      sent.then(
        (counts) => {
          if (late) giveBack(batch, counts);
        },
        () => {},
      );
    }
    reply.then((counts) => {
      batch.forEach((entry, index) =>
        entry.resolve({ consumed: Number(counts[2 * index]), msBeforeNext: Number(counts[2 * index + 1]) }),
      );
    }, fail);
  }

  /** Takes back what a batch answered too late added (its callers were told it failed). */
  function giveBack(batch: Pending[], counts: number[]): void {
    batch.forEach((entry, index) => {
      if (entry.points > 0 && Number(counts[2 * index]) <= entry.limit)
        counter.add(entry.key, entry.windowSeconds, -entry.points, entry.limit).catch(() => {});
    });
  }

  const counter: RedisCounter = {
    add(key, windowSeconds, points, limit) {
      return new Promise((resolve, reject) => {
        // setImmediate, not nextTick: it runs after every socket that was readable in this
        // turn has been handled, so the requests that arrived together are counted together.
        if (pending.length === 0) setImmediate(flush);
        pending.push({ key, windowSeconds, points, limit, resolve, reject });
      });
    },
  };
  return counter;
}
