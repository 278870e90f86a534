/**
 * Whether a publish/subscribe listener is caught up, proved rather than assumed: a link that
 * drops packets never closes its socket, and messages simply stop arriving. See
 * live-subscription.ts for the reasoning and the bound it gives.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { SubscriberConnection } from './redis-subscriber.ts';

/** How often the subscribed connection is asked to prove it is caught up. */
export const PING_INTERVAL_MS = 250;
/** How old the last proof may be for the listener to count as caught up. */
export const LIVE_WINDOW_MS = 1000;
/** A ping unanswered this long: the link is taken for dead and the connection replaced. */
export const RECONNECT_AFTER_MS = 3000;

/** How the log names a subscription and what its process does while it is silent. */
export interface SubscriptionWords {
  /** `cache invalidation bus` */
  name: string;
  /** `the cache is bypassed`: what holds until the subscription proves itself again. */
  whileSilent: string;
  /** `the cache serves again` */
  whenBack: string;
}

/** The proofs of one subscriber connection. Times are performance.now(), not a caller's clock. */
export interface SubscriptionLiveness {
  /** Subscribed on the current connection: caught up as of `sentAt`, when SUBSCRIBE was sent. */
  subscribed(sentAt: number): void;
  /** The connection is gone: what it proved no longer counts, and no ping goes out until `subscribed`. */
  lost(): void;
  /** Caught up within the last LIVE_WINDOW_MS. */
  live(): boolean;
  stop(): void;
}

export function watchLiveness(
  subscriber: SubscriberConnection,
  log: Logger,
  words: SubscriptionWords,
): SubscriptionLiveness {
  let active = false;
  let caughtUpAt = -Infinity;
  let pingSentAt: number | undefined;
  // Bumped on every loss: an answer that arrives from an older connection proves nothing.
  let generation = 0;
  let silent = false;

  const ping = (now: number) => {
    const sent = generation;
    pingSentAt = now;
    subscriber.ping().then(
      () => {
        if (sent !== generation) return;
        pingSentAt = undefined;
        caughtUpAt = Math.max(caughtUpAt, now);
        if (silent) log.warn(`${words.name} answers again: ${words.whenBack}`);
        silent = false;
      },
      () => {
        if (sent === generation) pingSentAt = undefined;
      },
    );
  };

  const tick = () => {
    if (!active) return;
    const now = performance.now();
    if (!silent && now - caughtUpAt > LIVE_WINDOW_MS) {
      silent = true;
      log.warn(
        { silentMs: Math.round(now - caughtUpAt) },
        `${words.name} silent: ${words.whileSilent} until it answers`,
      );
    }
    if (pingSentAt === undefined) ping(now);
    else if (now - pingSentAt >= RECONNECT_AFTER_MS) {
      log.warn({ unansweredMs: Math.round(now - pingSentAt) }, `${words.name}: reconnecting`);
      // Its `close` comes back here as `lost`, its next `ready` as `subscribed`.
      subscriber.reconnectNow();
    }
  };
  const timer = setInterval(tick, PING_INTERVAL_MS);
  timer.unref();

  return {
    subscribed(sentAt) {
      active = true;
      silent = false;
      caughtUpAt = Math.max(caughtUpAt, sentAt);
    },
    lost() {
      active = false;
      generation++;
      pingSentAt = undefined;
      caughtUpAt = -Infinity;
    },
    live: () => active && performance.now() - caughtUpAt <= LIVE_WINDOW_MS,
    stop() {
      active = false;
      clearInterval(timer);
    },
  };
}
