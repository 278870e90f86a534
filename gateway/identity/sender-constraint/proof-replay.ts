/**
 * DPoP proofs are single-use (RFC 9449 §11.1): a proof's `jti` is remembered until its `iat`
 * leaves the acceptance window, and seen again it is refused. With Redis, one `SET NX PX`
 * per proof (one round trip, atomic) makes that true across every replica: a proof captured
 * and replayed at another replica finds the key its first use set. The key is a digest of
 * the proof key's thumbprint and the jti, so each costs a fixed few dozen bytes, and it
 * expires with the window: memory is bounded by the proofs of one window.
 *
 * Without Redis (one process, as the memory rate limits), a map bounded in entries; when it is
 * full of proofs still inside the window it refuses to judge (503) rather than forget one.
 */
import { hash as digest } from 'node:crypto';
import type { RedisClient } from '../../../shared/redis.ts';

export const PROOF_KEY_PREFIX = 'dpop:jti:';
/** Proofs remembered per process without Redis: a window's worth at a few thousand a second. */
const MEMORY_MAX_PROOFS = 500_000;

/** `first`: never seen, now remembered; `replayed`: seen before; `unavailable`: cannot tell. */
export type ProofUse = 'first' | 'replayed' | 'unavailable';

export interface ProofReplay {
  /** Records the proof's use; `expiresAt` (epoch ms) is when its iat leaves the window. */
  use(jkt: string, jti: string, expiresAt: number): Promise<ProofUse>;
}

/** Where a proof is remembered: one key per key and jti, of fixed length whatever the jti. */
function proofKey(jkt: string, jti: string): string {
  return PROOF_KEY_PREFIX + digest('sha256', `${jkt} ${jti}`, 'base64url');
}

export function createRedisProofReplay(redis: RedisClient, now: () => number = Date.now): ProofReplay {
  return {
    async use(jkt, jti, expiresAt) {
      // At least a second: a proof at the very edge of the window must not be forgotten at once.
      const ttlMs = Math.max(1000, Math.ceil(expiresAt - now()));
      try {
        const set = await redis.set(proofKey(jkt, jti), '1', 'PX', ttlMs, 'NX');
        return set === 'OK' ? 'first' : 'replayed';
      } catch {
        // Fail closed: a replay must not slip through while Redis is away.
        return 'unavailable';
      }
    },
  };
}

export function createMemoryProofReplay(
  now: () => number = Date.now,
  maxProofs = MEMORY_MAX_PROOFS,
): ProofReplay {
  // Insertion order is nearly expiry order (the window is one length for every proof), so
  // expired entries are dropped from the front.
  const seen = new Map<string, number>();
  const sweep = (at: number) => {
    for (const [key, expiresAt] of seen) {
      if (expiresAt > at) break;
      seen.delete(key);
    }
  };
  return {
    use(jkt, jti, expiresAt) {
      const at = now();
      sweep(at);
      const key = proofKey(jkt, jti);
      const known = seen.get(key);
      if (known !== undefined && known > at) return Promise.resolve('replayed');
      if (seen.size >= maxProofs) return Promise.resolve('unavailable');
      seen.set(key, Math.max(expiresAt, at + 1000));
      return Promise.resolve('first');
    },
  };
}
