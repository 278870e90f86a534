/**
 * Invalidations shared by every gateway replica over Redis publish/subscribe.
 *
 * A replica that is not subscribed cannot know what the others invalidated, so the cache
 * neither serves nor stores while the bus is down, and forgets everything it holds when the
 * subscription comes back: messages sent in between are lost for good.
 *
 * Down includes silent: a link that drops packets (a blackholed route, a dead middlebox) never
 * closes the socket, and the messages stop arriving without a sign. So the bus is live only as
 * long as it proves it (bus-liveness.ts): it PINGs on the subscribed connection every PING_INTERVAL_MS, and Redis
 * answers after every message it wrote to that connection before, so an answer to a ping sent at
 * time t shows that every invalidation published before t has been applied. The bus counts as
 * live while that t is at most LIVE_WINDOW_MS old; a ping unanswered for RECONNECT_AFTER_MS
 * drops the socket (its close would never complete over a dead link) and reconnects, which
 * empties the cache as any lost subscription does. Hence the bound docs/caching.md states: an
 * answer older than a write made through another replica is not served more than
 * LIVE_WINDOW_MS (plus the write's own publish) after that write.
 *
 * Why pings and not a stream replayed from a last-seen id: pub/sub stays the one bus (no key, so
 * no hot Cluster slot and no trimming to size), the ping's answer is an exact "caught up to"
 * mark on the connection that carries the messages, and what a reconnect costs (an empty cache)
 * is rare.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { watchLiveness } from './bus-liveness.ts';
import type { RedisClient, SubscriberConnection } from '../../../shared/redis.ts';
import type { Logger } from 'pino';

/** What one replica tells the others to drop: paths, or everything under a prefix. */
export interface InvalidationMessage {
  paths?: string[];
  prefix?: string;
}

/** The publish/subscribe link between replicas. */
export interface InvalidationBus {
  /** Subscribed, and caught up with the other replicas within the last LIVE_WINDOW_MS. */
  ready(): boolean;
  /** Resolves once subscribed, or `false` after `timeoutMs`. */
  whenReady(timeoutMs: number): Promise<boolean>;
  /** Resolves when Redis has handed the message to the subscribers; failures are logged. */
  publish(message: InvalidationMessage): Promise<void>;
  close(): Promise<void>;
}

/** Connections, channel and the callbacks into the cache. */
export interface BusDeps {
  publisher: RedisClient;
  /** A connection that only listens (shared/redis.ts createSubscriber: a cluster's reports its node's loss). */
  subscriber: SubscriberConnection;
  channel: string;
  log: Logger;
  /** A message from another replica. */
  onMessage(message: InvalidationMessage): void;
  /** The subscription was lost and is back: what is stored may have missed invalidations. */
  onResubscribed(): void;
}

/** Subscribes on the subscriber connection whenever it becomes ready; ignores its own messages. */
export function createInvalidationBus(deps: BusDeps): InvalidationBus {
  const self = randomUUID();
  let subscribed = false;
  let everSubscribed = false;
  let closed = false;
  const waiters = new Set<() => void>();

  const liveness = watchLiveness(deps.subscriber, deps.log);

  const subscribe = () => {
    if (closed) return;
    const sentAt = performance.now();
    deps.subscriber.subscribe(deps.channel).then(
      () => {
        if (subscribed || closed) return;
        subscribed = true;
        liveness.subscribed(sentAt);
        if (everSubscribed) deps.onResubscribed();
        everSubscribed = true;
        for (const wake of waiters) wake();
        waiters.clear();
      },
      (error: unknown) => deps.log.warn({ err: describe(error) }, 'cache invalidation: subscribe failed'),
    );
  };
  const lost = () => {
    if (subscribed) deps.log.warn('cache invalidation bus lost: the cache is bypassed until Redis is back');
    subscribed = false;
    liveness.lost();
  };
  deps.subscriber.on('ready', subscribe);
  deps.subscriber.on('close', lost);
  deps.subscriber.on('end', lost);
  deps.subscriber.on('message', (channel: string, text: string) => {
    if (channel !== deps.channel) return;
    try {
      const parsed = JSON.parse(text) as { from?: string } & InvalidationMessage;
      if (parsed.from === self) return;
      deps.onMessage({
        ...(Array.isArray(parsed.paths) ? { paths: parsed.paths.filter((p) => typeof p === 'string') } : {}),
        ...(typeof parsed.prefix === 'string' ? { prefix: parsed.prefix } : {}),
      });
    } catch (error) {
      deps.log.warn({ err: describe(error) }, 'cache invalidation: unreadable message');
    }
  });
  if (deps.subscriber.status === 'ready') subscribe();

  return {
    ready: () => subscribed && liveness.live(),
    whenReady(timeoutMs) {
      if (subscribed) return Promise.resolve(true);
      return new Promise((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          waiters.delete(wake);
          resolve(false);
        }, timeoutMs);
        waiters.add(wake);
      });
    },
    async publish(message) {
      try {
        await deps.publisher.publish(deps.channel, JSON.stringify({ from: self, ...message }));
      } catch (error) {
        deps.log.warn(
          { err: describe(error) },
          'cache invalidation: publish failed; other replicas may serve stale',
        );
      }
    },
    async close() {
      closed = true;
      subscribed = false;
      liveness.stop();
      deps.subscriber.off('ready', subscribe);
      try {
        await deps.subscriber.unsubscribe(deps.channel);
      } catch {
        // Closing anyway: the connection belongs to the caller.
      }
    },
  };
}

function describe(error: unknown): { name?: string | undefined; message?: string | undefined } {
  const { name, message } = error as { name?: string; message?: string };
  return { name, message };
}
