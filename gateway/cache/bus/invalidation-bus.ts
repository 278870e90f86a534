/**
 * Invalidations shared by every gateway replica over Redis publish/subscribe.
 *
 * A replica that is not subscribed cannot know what the others invalidated, so the cache
 * neither serves nor stores while the bus is not live, and forgets everything it holds when the
 * subscription comes back: messages sent in between are lost for good.
 *
 * Live is proved, not assumed (shared/live-subscription.ts, the mechanism the introspection
 * revocations use too): PINGs on the subscribed connection every 250 ms, live while the last
 * answer is at most LIVE_WINDOW_MS old, a dead link replaced after RECONNECT_AFTER_MS. Hence the
 * bound docs/caching.md states: an answer older than a write made through another replica is
 * not served more than LIVE_WINDOW_MS (plus the write's own publish) after that write.
 */
import { randomUUID } from 'node:crypto';
import { subscribeLive } from '../../../shared/live-subscription.ts';
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
  const subscription = subscribeLive(
    {
      subscriber: deps.subscriber,
      channel: deps.channel,
      log: deps.log,
      words: {
        name: 'cache invalidation bus',
        whileSilent: 'the cache is bypassed',
        whenBack: 'the cache serves again',
      },
    },
    {
      message(text) {
        try {
          const message = othersMessage(text, self);
          if (message !== undefined) deps.onMessage(message);
        } catch (error) {
          deps.log.warn({ err: describe(error) }, 'cache invalidation: unreadable message');
        }
      },
      resubscribed: () => deps.onResubscribed(),
    },
  );

  return {
    ready: () => subscription.live(),
    whenReady: (timeoutMs) => subscription.whenSubscribed(timeoutMs),
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
    close: () => subscription.close(),
  };
}

/** What another replica asked to drop; undefined for this one's own. Throws on what is not JSON. */
function othersMessage(text: string, self: string): InvalidationMessage | undefined {
  const parsed = JSON.parse(text) as { from?: string } & InvalidationMessage;
  if (parsed.from === self) return undefined;
  return {
    ...(Array.isArray(parsed.paths) ? { paths: parsed.paths.filter((p) => typeof p === 'string') } : {}),
    ...(typeof parsed.prefix === 'string' ? { prefix: parsed.prefix } : {}),
  };
}

function describe(error: unknown): { name?: string | undefined; message?: string | undefined } {
  const { name, message } = error as { name?: string; message?: string };
  return { name, message };
}
