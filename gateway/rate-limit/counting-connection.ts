/**
 * The rate-limit counter's own connection to Redis, so that its deadline can be the store
 * timeout as Redis sees it rather than as a busy gateway sees it.
 *
 * On the shared connection ioredis's command timeout is the store timeout, and its timer fires
 * before the event loop reads a socket: a gateway whose loop stalls past the timeout (a burst,
 * a descheduled process) has the answer waiting in the socket and still counts the command as
 * failed (on a busy 2-core test machine, a few counts in a few hundred at 250 ms). Worse, the
 * count was made in Redis, and ioredis drops the late answer, so nothing can give it back.
 *
 * Here ioredis only keeps a ceiling (a stuck command is let go after it), the counter applies
 * the store timeout itself after reading what the socket holds (redis-counter.ts), and an
 * answer that comes after the deadline is still seen, and its count given back. While this
 * connection is not ready (it connects a moment after the shared one), counts go through the
 * shared one as before (policy-counter.ts): a down Redis still fails them at once.
 */
import { createLastingRedis } from '../../shared/lasting-redis.ts';
import { isCluster, type RedisClient } from '../../shared/redis.ts';

export interface CountingConnection {
  redis: RedisClient;
  /** The store timeout: what the shared connection's commands are allowed. */
  deadlineMs: number;
  close(): void;
}

/** A stuck command is let go after this (at least a second, or four store timeouts). */
function ceilingOf(deadlineMs: number): number {
  return Math.max(1000, 4 * deadlineMs);
}

export function openCountingConnection(shared: RedisClient, storeTimeoutMs: number): CountingConnection {
  if (isCluster(shared)) {
    const deadlineMs = shared.options.redisOptions?.commandTimeout ?? storeTimeoutMs;
    const redis = shared.duplicate([], {
      redisOptions: { commandTimeout: ceilingOf(deadlineMs) },
    });
    redis.on('error', () => {}); // the shared connection reports the outages
    return { redis, deadlineMs, close: () => redis.disconnect() };
  }
  const deadlineMs = shared.options.commandTimeout ?? storeTimeoutMs;
  const redis = createLastingRedis(undefined, {
    ...shared.options,
    replyMapping: 'legacy',
    commandTimeout: ceilingOf(deadlineMs),
  });
  redis.on('error', () => {}); // the shared connection reports the outages
  return { redis, deadlineMs, close: () => redis.disconnect() };
}
