/**
 * Revoking an opaque token at the gateway, on every replica at once: its digest is written to
 * Redis (kept until any token it could be has expired) and published, so every replica drops
 * its cached answer the moment the message arrives, and a replica introspecting the token
 * later reads the record and refuses it whatever the identity provider answers. As with API
 * keys, a revocation that cannot be read fails closed.
 *
 * A replica may miss a message: its subscription is lost, or its link to Redis goes silent
 * without closing. The subscription (shared/live-subscription.ts, as the cache invalidation bus)
 * proves it keeps hearing by PINGs; while it cannot (`live()` false, within about a second of
 * the silence) a cached answer counts only once the record says the token is not revoked, and
 * when the subscription is back after a gap, or made for the first time, every cached answer is
 * forgotten.
 *
 * A record is kept at least MIN_REVOCATION_SECONDS, the longest any replica can hold an answer
 * cached, whatever its config (the schema's ceilings): a replica that missed the message and
 * checks the record before trusting its cached answer must still find it. Bounded by the ceiling,
 * not by one config's `cacheMaxSeconds`, so it holds on every replica with no agreement between
 * them or with whoever revokes. Kept until the token's own `exp` (the default, a day) it also
 * outlives the answers of a provider that still calls the token active.
 *
 * JWTs are not revoked here: a JWT's own `exp` (bounded by auth.jwt.maxLifetimeSeconds) and
 * the issuer's key rotation are what end one, as before.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { subscribeLive } from '../../../shared/live-subscription.ts';
import { createSubscriber, type RedisClient, type SubscriberConnection } from '../../../shared/redis.ts';
import { CACHE_MAX_SECONDS_CEILING, TIMEOUT_MS_CEILING } from '../../config/schema/introspection.ts';

/** Redis key of a revoked digest, under the client's keyPrefix. */
export const revokedKey = (tokenDigest: string): string => `introspection:revoked:${tokenDigest}`;
/** The channel is not prefixed by ioredis: the prefix is written into its name. */
export const revocationChannel = (redis: RedisClient): string =>
  `${redis.options.keyPrefix ?? 'portico:'}introspection-revocations`;
/** A digest is SHA-256 in base64url. */
const DIGEST = /^[A-Za-z0-9_-]{43}$/;
/** Revocations remembered per process (between the message and the cached answer's end). */
const LOCAL_REVOCATIONS = 10_000;

/**
 * The shortest life of a revocation record: an answer is cached for at most the ceiling of
 * `cacheMaxSeconds`, counted from when the call ends, which may be a whole timeout after the
 * record was read.
 */
export const MIN_REVOCATION_SECONDS = CACHE_MAX_SECONDS_CEILING + TIMEOUT_MS_CEILING / 1000;

export const isTokenDigest = (value: string): boolean => DIGEST.test(value);

/** Writes the revocation, then tells every replica. Rejects when Redis does not take it. */
export async function revokeTokenDigest(
  redis: RedisClient,
  tokenDigest: string,
  ttlSeconds: number,
): Promise<void> {
  if (!isTokenDigest(tokenDigest)) throw new Error('not a token digest (SHA-256, base64url)');
  if (!(ttlSeconds >= MIN_REVOCATION_SECONDS))
    throw new Error(`a revocation is kept at least ${MIN_REVOCATION_SECONDS} s, not ${ttlSeconds}`);
  await redis.set(revokedKey(tokenDigest), '1', 'EX', ttlSeconds);
  await redis.publish(revocationChannel(redis), tokenDigest);
}

export interface Revocations {
  /** Whether the token with this digest was revoked; rejects when that cannot be known. */
  isRevoked(tokenDigest: string): Promise<boolean>;
  /** Revoked as far as this process heard: no I/O, for answers arriving after the message. */
  heardOf(tokenDigest: string): boolean;
  /** Every revocation published up to LIVE_WINDOW_MS ago has been heard: cached answers hold. */
  live(): boolean;
  close(): void;
}

export interface RevocationListener {
  /** A token was revoked: drop its cached answer. */
  revoked(tokenDigest: string): void;
  /** Revocations may have been missed: drop every cached answer. */
  missed(): void;
}

/**
 * Listens for revocations on a connection of its own (`subscriber`, made from `redis` unless
 * given), which it closes with itself.
 */
export function watchRevocations(
  redis: RedisClient,
  listener: RevocationListener,
  logger: Logger,
  subscriber: SubscriberConnection = createSubscriber(redis),
): Revocations {
  const heard = new LRUCache<string, true>({ max: LOCAL_REVOCATIONS });
  const subscription = subscribeLive(
    {
      subscriber,
      channel: revocationChannel(redis),
      log: logger,
      words: {
        name: 'introspection revocations',
        whileSilent: 'cached answers are checked against the revocation records',
        whenBack: 'cached answers hold again',
      },
    },
    {
      message(text) {
        if (!isTokenDigest(text)) return;
        heard.set(text, true);
        listener.revoked(text);
      },
      // Back after a gap: whatever was published meanwhile is lost, so nothing cached is trusted.
      resubscribed: () => listener.missed(),
      // Answers cached before the first subscription (checked against the record while it was
      // not live) would be trusted once it is, though a revocation published between their
      // record read and the subscription was never heard.
      firstSubscribed: () => listener.missed(),
    },
  );

  return {
    async isRevoked(tokenDigest) {
      if (heard.has(tokenDigest)) return true;
      return (await redis.exists(revokedKey(tokenDigest))) === 1;
    },
    heardOf: (tokenDigest) => heard.has(tokenDigest),
    live: () => subscription.live(),
    close() {
      void subscription.close();
      subscriber.disconnect();
    },
  };
}
