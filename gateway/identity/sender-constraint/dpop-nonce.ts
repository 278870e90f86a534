/**
 * Server nonces for DPoP proofs (RFC 9449 §8), for routes that require them: a proof must then
 * carry a nonce this gateway issued recently, so a proof made ahead of time with a stolen key
 * stops working when the nonce does.
 *
 * Stateless and the same at every replica: a nonce is the time step it was issued in, MACed
 * with the identity-assertion key ring every replica already shares (under its own label, so
 * a nonce is never an assertion). A nonce is good in its own step and the next, so it lives
 * between one and two half-lifetimes. A proof that used any other than the current one gets the
 * current one on its answer (RFC 9449 §8.2), so a client calling at least once per half-lifetime
 * always holds a good nonce; one that has let its nonce lapse is answered `use_dpop_nonce` with
 * the current one, and retries.
 */
import type { HmacKey } from '../../../shared/data-dir-secrets.ts';
import { decodeMac, hmacSha256, macEquals } from '../../../shared/hmac.ts';

const LABEL = 'portico dpop-nonce v1 ';
const NONCE = /^([0-9a-z]{1,12})\.([A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{43})$/;

export type NonceCheck = 'ok' | 'missing' | 'stale';

export class DpopNonces {
  private readonly keys: readonly HmacKey[];
  private readonly stepMs: number;
  private readonly now: () => number;
  /** The nonce of the step last asked for: one MAC per step, not per request. */
  private issued: { step: number; nonce: string } | undefined;

  constructor(keys: readonly HmacKey[], lifetimeSeconds: number, now: () => number) {
    if (keys.length === 0) throw new Error('DPoP nonces need a key');
    this.keys = keys;
    this.stepMs = (lifetimeSeconds * 1000) / 2;
    this.now = now;
  }

  /** The nonce to hand out now. */
  current(): string {
    const step = Math.floor(this.now() / this.stepMs);
    if (this.issued?.step === step) return this.issued.nonce;
    const key = this.keys[0]!;
    const nonce = `${step.toString(36)}.${key.kid}.${hmacSha256(key, LABEL + step).toString('base64url')}`;
    this.issued = { step, nonce };
    return nonce;
  }

  /**
   * The nonce to offer on the answer to a proof that carried `used` (good, or it would not have
   * got this far): the current one when `used` is older, or made with a key no longer first in
   * the ring; else nothing.
   */
  renewal(used: string): string | undefined {
    const current = this.current();
    return used === current ? undefined : current;
  }

  /** Whether a proof's `nonce` claim is one of ours, still good. */
  check(nonce: unknown): NonceCheck {
    if (nonce === undefined) return 'missing';
    const match = typeof nonce === 'string' ? NONCE.exec(nonce) : null;
    if (match === null) return 'stale';
    const [, stepText, kid, mac] = match as unknown as [string, string, string, string];
    const step = parseInt(stepText, 36);
    const current = Math.floor(this.now() / this.stepMs);
    if (step !== current && step !== current - 1) return 'stale';
    const key = this.keys.find((candidate) => candidate.kid === kid);
    const given = decodeMac(mac);
    if (key === undefined || given === undefined) return 'stale';
    return macEquals(given, hmacSha256(key, LABEL + step)) ? 'ok' : 'stale';
  }
}
