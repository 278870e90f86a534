/**
 * Hearing at once that a gateway joined the rate-limit fleet (fleet-share.ts), rather than at
 * this gateway's next heartbeat: a Redis outage just after a join would otherwise leave this
 * gateway counting a fleet one smaller, and admitting more than its share.
 *
 * The heartbeat script that adds a gateway to the set publishes the set's new size on this
 * channel in the same atomic step, so every gateway subscribed then hears it; the subscription
 * is the one the cache invalidation bus and the revocations are built on (live-subscription.ts:
 * a cluster's listening node moves on when lost, a silent link is replaced). A join published
 * while this gateway was not subscribed is lost: when the subscription starts or comes back,
 * the caller re-reads the set, and between those it is learned at the next heartbeat.
 * Departures are not announced: a smaller fleet only makes shares smaller, the safe direction.
 */
import type { Logger } from 'pino';
import { subscribeLive } from '../../shared/live-subscription.ts';
import { createSubscriber, type RedisClient } from '../../shared/redis.ts';

/** What the listener is told. */
export interface JoinListener {
  /** A gateway joined: the set counted `size` right after it. */
  joined(size: number): void;
  /** Joins may have been published unheard (first subscription, or back after a gap). */
  mayHaveMissed(): void;
}

export interface FleetJoins {
  close(): Promise<void>;
}

/** The channel the heartbeat script publishes to; ioredis does not prefix channels, so it is here. */
export function fleetJoinChannel(redis: RedisClient): string {
  return `${redis.options.keyPrefix ?? 'portico:'}rl:fleet-joined`;
}

/** Listens on a connection of its own, which it closes with itself. */
export function listenForJoins(redis: RedisClient, log: Logger, listener: JoinListener): FleetJoins {
  const subscriber = createSubscriber(redis);
  const subscription = subscribeLive(
    {
      subscriber,
      channel: fleetJoinChannel(redis),
      log,
      words: {
        name: 'rate-limit fleet joins',
        whileSilent: 'a gateway that joins is counted at the next heartbeat',
        whenBack: 'joins are counted at once again',
      },
    },
    {
      message(text) {
        const size = Number(text);
        if (Number.isSafeInteger(size) && size > 0) listener.joined(size);
      },
      resubscribed: () => listener.mayHaveMissed(),
      firstSubscribed: () => listener.mayHaveMissed(),
    },
  );
  return {
    async close() {
      // Disconnected at once: a polite UNSUBSCRIBE over a silent link would never be answered.
      const unsubscribing = subscription.close();
      subscriber.disconnect();
      await unsubscribing;
    },
  };
}
