/**
 * One Redis publish/subscribe channel, heard by a listener that must not act on a missed
 * message: the cache invalidation bus (a stale answer) and the introspection revocations (a
 * revoked token). Both are built on this, so both notice a lost link the same way.
 *
 * A listener that is not subscribed cannot know what was published meanwhile, and those
 * messages are lost for good: so it is told when the subscription comes back after a gap
 * (`resubscribed`), and forgets whatever it kept on the strength of the messages.
 *
 * Down includes silent: a link that drops packets (a blackholed route, a dead middlebox) never
 * closes the socket, and the messages stop arriving without a sign. So the subscription is live
 * only as long as it proves it (subscription-liveness.ts): it PINGs on the subscribed connection
 * every PING_INTERVAL_MS, and Redis answers after every message it wrote to that connection
 * before, so an answer to a ping sent at time t shows that every message published before t has
 * been heard. It counts as live while that t is at most LIVE_WINDOW_MS old; a ping unanswered for
 * RECONNECT_AFTER_MS drops the socket (its close would never complete over a dead link) and
 * reconnects, which comes back as `resubscribed`. Hence the bound both users state: nothing a
 * message would have changed is trusted more than LIVE_WINDOW_MS (plus the publish itself)
 * after the message was published.
 *
 * Why pings and not a stream replayed from a last-seen id: pub/sub stays the one channel (no
 * key, so no hot Cluster slot and no trimming to size), the ping's answer is an exact "caught
 * up to" mark on the connection that carries the messages, and what a reconnect costs (the
 * listener forgets what it kept) is rare.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { SubscriberConnection } from './redis-subscriber.ts';
import { watchLiveness, type SubscriptionWords } from './subscription-liveness.ts';

/** How long a close waits for Redis to confirm the UNSUBSCRIBE. */
const UNSUBSCRIBE_WAIT_MS = 500;

export type { SubscriptionWords } from './subscription-liveness.ts';

/** What the subscription hands its listener. */
export interface ChannelListener {
  /** A message on the channel, as published. */
  message(text: string): void;
  /** The subscription was lost and is back: messages published in between are gone. */
  resubscribed(): void;
  /**
   * Subscribed for the first time: whatever was published before was never heard. For a
   * listener that kept something before it (the cache keeps nothing until subscribed).
   */
  firstSubscribed?(): void;
}

export interface LiveSubscriptionOptions {
  /** A connection that only listens (redis.ts createSubscriber: a cluster's reports its node's loss). */
  subscriber: SubscriberConnection;
  /** ioredis does not prefix channels: the deployment's key prefix is written into the name. */
  channel: string;
  log: Logger;
  words: SubscriptionWords;
}

export interface LiveSubscription {
  /** Subscribed, and caught up with the channel within the last LIVE_WINDOW_MS. */
  live(): boolean;
  /** Resolves once subscribed, or `false` after `timeoutMs`. */
  whenSubscribed(timeoutMs: number): Promise<boolean>;
  /** Stops listening; the connection stays the caller's. */
  close(): Promise<void>;
}

/** Subscribes whenever the connection becomes ready, and proves it keeps hearing. */
export function subscribeLive(options: LiveSubscriptionOptions, listener: ChannelListener): LiveSubscription {
  const { subscriber, channel, log, words } = options;
  let subscribed = false;
  let everSubscribed = false;
  let closed = false;
  const waiters = new Set<() => void>();
  const liveness = watchLiveness(subscriber, log, words);

  const subscribe = () => {
    if (closed) return;
    const sentAt = performance.now();
    subscriber.subscribe(channel).then(
      () => {
        if (subscribed || closed) return;
        subscribed = true;
        liveness.subscribed(sentAt);
        if (everSubscribed) listener.resubscribed();
        else listener.firstSubscribed?.();
        everSubscribed = true;
        for (const wake of waiters) wake();
        waiters.clear();
      },
      (error: unknown) => log.warn({ err: describe(error) }, `${words.name}: subscribe failed`),
    );
  };
  const lost = () => {
    if (subscribed) log.warn(`${words.name} lost: ${words.whileSilent} until Redis is back`);
    subscribed = false;
    liveness.lost();
  };
  const hear = (from: string, text: string) => {
    if (from === channel && !closed) listener.message(text);
  };
  subscriber.on('ready', subscribe);
  subscriber.on('close', lost);
  subscriber.on('end', lost);
  subscriber.on('message', hear);
  if (subscriber.status === 'ready') subscribe();

  return {
    live: () => subscribed && liveness.live(),
    whenSubscribed(timeoutMs) {
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
    async close() {
      closed = true;
      subscribed = false;
      liveness.stop();
      subscriber.off('ready', subscribe);
      subscriber.off('close', lost);
      subscriber.off('end', lost);
      subscriber.off('message', hear);
      // The subscribed connection has no command deadline: over a silent link the UNSUBSCRIBE
      // would never be answered and the caller's drain would wait for its own deadline. It is
      // asked, not awaited past UNSUBSCRIBE_WAIT_MS; the connection is the caller's to close.
      let giveUp: NodeJS.Timeout | undefined;
      await Promise.race([
        subscriber.unsubscribe(channel).catch(() => {}),
        new Promise((resolve) => (giveUp = setTimeout(resolve, UNSUBSCRIBE_WAIT_MS))),
      ]);
      clearTimeout(giveUp);
    },
  };
}

/** An error's name and message for the log, never its other fields. */
function describe(error: unknown): { name?: string | undefined; message?: string | undefined } {
  const { name, message } = error as { name?: string; message?: string };
  return { name, message };
}
