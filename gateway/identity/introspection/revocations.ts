/**
 * Revoking an opaque token at the gateway, on every replica at once: its digest is written to
 * Redis (kept until any token it could be has expired) and published, so every replica drops
 * its cached answer the moment the message arrives, and a replica introspecting the token
 * later reads the record and refuses it whatever the identity provider answers. A replica
 * whose subscription was interrupted may have missed a revocation: it forgets every cached
 * answer when it is back. As with API keys, a revocation that cannot be read fails closed.
 *
 * JWTs are not revoked here: a JWT's own `exp` (bounded by auth.jwt.maxLifetimeSeconds) and
 * the issuer's key rotation are what end one, as before.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { createSubscriber, type RedisClient, type SubscriberConnection } from '../../../shared/redis.ts';

/** Redis key of a revoked digest, under the client's keyPrefix. */
export const revokedKey = (tokenDigest: string): string => `introspection:revoked:${tokenDigest}`;
/** The channel is not prefixed by ioredis: the prefix is written into its name. */
export const revocationChannel = (redis: RedisClient): string =>
  `${redis.options.keyPrefix ?? 'portico:'}introspection-revocations`;
/** A digest is SHA-256 in base64url. */
const DIGEST = /^[A-Za-z0-9_-]{43}$/;
/** Revocations remembered per process (between the message and the cached answer's end). */
const LOCAL_REVOCATIONS = 10_000;

export const isTokenDigest = (value: string): boolean => DIGEST.test(value);

/** Writes the revocation, then tells every replica. Rejects when Redis does not take it. */
export async function revokeTokenDigest(
  redis: RedisClient,
  tokenDigest: string,
  ttlSeconds: number,
): Promise<void> {
  if (!isTokenDigest(tokenDigest)) throw new Error('not a token digest (SHA-256, base64url)');
  await redis.set(revokedKey(tokenDigest), '1', 'EX', ttlSeconds);
  await redis.publish(revocationChannel(redis), tokenDigest);
}

export interface Revocations {
  /** Whether the token with this digest was revoked; rejects when that cannot be known. */
  isRevoked(tokenDigest: string): Promise<boolean>;
  /** Revoked as far as this process heard: no I/O, for answers arriving after the message. */
  heardOf(tokenDigest: string): boolean;
  close(): void;
}

export interface RevocationListener {
  /** A token was revoked: drop its cached answer. */
  revoked(tokenDigest: string): void;
  /** Revocations may have been missed: drop every cached answer. */
  missed(): void;
}

export function watchRevocations(
  redis: RedisClient,
  listener: RevocationListener,
  logger: Logger,
): Revocations {
  const heard = new LRUCache<string, true>({ max: LOCAL_REVOCATIONS });
  const channel = revocationChannel(redis);
  const subscriber: SubscriberConnection = createSubscriber(redis);
  let subscribedOnce = false;

  let closed = false;
  const subscribe = () => {
    if (closed) return;
    subscriber.subscribe(channel).then(
      () => {
        // Back after a gap: whatever was published meanwhile is lost, so nothing cached is trusted.
        if (subscribedOnce) listener.missed();
        subscribedOnce = true;
      },
      (error: unknown) =>
        logger.warn({ err: (error as Error).message }, 'introspection revocations: subscribe failed'),
    );
  };
  subscriber.on('ready', subscribe);
  if (subscriber.status === 'ready') subscribe();
  subscriber.on('message', (from, message) => {
    if (from !== channel || !isTokenDigest(message)) return;
    heard.set(message, true);
    listener.revoked(message);
  });

  return {
    async isRevoked(tokenDigest) {
      if (heard.has(tokenDigest)) return true;
      return (await redis.exists(revokedKey(tokenDigest))) === 1;
    },
    heardOf: (tokenDigest) => heard.has(tokenDigest),
    close() {
      closed = true;
      subscriber.off('ready', subscribe);
      subscriber.disconnect();
    },
  };
}
