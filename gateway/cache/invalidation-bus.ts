/**
 * Invalidations shared by every gateway replica over Redis publish/subscribe.
 *
 * A replica that is not subscribed cannot know what the others invalidated, so the cache
 * neither serves nor stores while the bus is down, and forgets everything it holds when the
 * subscription comes back: messages sent in between are lost for good.
 */
import { randomUUID } from 'node:crypto';
import type { RedisClient, SubscriberConnection } from '../../shared/redis.ts';
import type { Logger } from 'pino';

/** What one replica tells the others to drop: paths, or everything under a prefix. */
export interface InvalidationMessage {
  paths?: string[];
  prefix?: string;
}

/** The publish/subscribe link between replicas. */
export interface InvalidationBus {
  /** Subscribed and able to hear the other replicas. */
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

  const subscribe = () => {
    if (closed) return;
    deps.subscriber.subscribe(deps.channel).then(
      () => {
        if (subscribed) return;
        subscribed = true;
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
    ready: () => subscribed,
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
      deps.subscriber.off('ready', subscribe);
      try {
        await deps.subscriber.unsubscribe(deps.channel);
      } catch {
        // Closing anyway: the connection belongs to the caller.
      }
    },
  };
}

function describe(error: unknown): { name?: string; message?: string } {
  const { name, message } = error as { name?: string; message?: string };
  return { name, message };
}
