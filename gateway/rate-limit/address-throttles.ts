/**
 * The built-in limits on client addresses, beside the configured policies:
 * - failed authentication (`rateLimits.authFailures`): every credential not known good is
 *   counted before it is verified; over the limit, one that failed from that address is
 *   refused unverified, and a new one is verified only within `newCredentials` a window;
 * - the anonymous limit (`rateLimits.anonymous`): requests refused before anyone was
 *   identified (no route, no credential).
 * Both always count in memory when Redis fails: they never fail open. Addresses are counted
 * by address-key.ts (IPv6 by prefix). docs/security.md says why each is as it is.
 */
import { LRUCache } from 'lru-cache';
import { addressKey } from './address-key.ts';
import { durationSeconds, type RateLimitsConfig } from '../config/schema/rate-limit.ts';
import type { MostLimited } from './most-limited.ts';
import { limitedBy, type LimitedDecision } from './outcomes.ts';
import {
  added,
  compilePolicy,
  type CompiledPolicy,
  type Counted,
  type PolicyCounter,
} from './policy-counter.ts';

/**
 * One credential that is not known good, counted against its address before it is verified
 * (atomically: concurrent guesses cannot all pass a read-then-count check).
 */
export interface AuthAttempt {
  /**
   * Set when the credential is refused without being verified: its address is over the limit
   * and this credential failed from there before, or the address has spent its budget of new
   * credentials (`authFailures.newCredentials`) too.
   */
  readonly refusal: LimitedDecision | undefined;
  /** Takes the count back: the credential verified, or could not be judged (issuer down). */
  refund(): Promise<void>;
  /** The credential was judged invalid: from this address it is not verified again this window. */
  failed(): void;
}

/** Credentials that failed, per address, remembered for the failure window (bounded memory). */
const FAILED_CREDENTIALS = 10_000;

interface Compiled {
  authFailures: CompiledPolicy;
  /** Absent with `newCredentials: 0`: every new credential waits once over the limit. */
  newCredentials: CompiledPolicy | undefined;
  anonymous: CompiledPolicy;
  /** `<address> <fingerprint>` of credentials judged invalid, for the failure window. */
  failedCredentials: LRUCache<string, true>;
  ipv6PrefixLength: number;
}

function compile(c: RateLimitsConfig): Compiled {
  const { limit, window, newCredentials } = c.authFailures;
  return {
    authFailures: compilePolicy({ name: 'auth-failures', key: 'ip', limit, window }, 'builtin:'),
    newCredentials:
      newCredentials === 0
        ? undefined
        : compilePolicy({ name: 'new-credentials', key: 'ip', limit: newCredentials, window }, 'builtin:'),
    anonymous: compilePolicy({ name: 'anonymous', key: 'ip', ...c.anonymous }, 'builtin:'),
    failedCredentials: new LRUCache<string, true>({
      max: FAILED_CREDENTIALS,
      ttl: durationSeconds(window) * 1000,
    }),
    ipv6PrefixLength: c.ipv6PrefixLength,
  };
}

export class AddressThrottles {
  private compiled: Compiled;
  private readonly counter: PolicyCounter;
  private readonly limitedCallers: MostLimited;

  constructor(config: RateLimitsConfig, counter: PolicyCounter, limitedCallers: MostLimited) {
    this.compiled = compile(config);
    this.counter = counter;
    this.limitedCallers = limitedCallers;
  }

  reconfigure(config: RateLimitsConfig): void {
    this.compiled = compile(config);
  }

  /** The client address as every limit counts it (IPv6 by prefix). */
  addressOf(clientIp: string): string {
    return addressKey(clientIp, this.compiled.ipv6PrefixLength);
  }

  async countAuthAttempt(clientIp: string, fingerprint: string): Promise<AuthAttempt> {
    const { authFailures, newCredentials, failedCredentials } = this.compiled;
    const address = this.addressOf(clientIp);
    const counted = await this.counter.count(authFailures, address, 1, 'memory');
    if ('failed' in counted) return { refusal: undefined, refund: () => Promise.resolve(), failed: () => {} };
    const failedHere = `${address} ${fingerprint}`;
    const attempt = (refusal: AuthAttempt['refusal'], refund: () => Promise<void>): AuthAttempt => ({
      refusal,
      refund,
      failed: () => void failedCredentials.set(failedHere, true),
    });
    const over = limitedBy(authFailures, counted);
    if (over === undefined) return attempt(undefined, () => this.giveBack(authFailures, address, counted));
    // Over the limit: a credential that failed from here is refused unverified; a new one is
    // verified within the address's budget of new credentials, so that guesses made from a
    // shared address (a NAT, an office) do not keep a valid credential out.
    if (!failedCredentials.has(failedHere) && newCredentials !== undefined) {
      const fresh = await this.counter.count(newCredentials, address, 1, 'memory');
      if (!('failed' in fresh) && limitedBy(newCredentials, fresh) === undefined)
        return attempt(undefined, async () => {
          await this.giveBack(authFailures, address, counted);
          await this.giveBack(newCredentials, address, fresh);
        });
    }
    this.limitedCallers.record(`ip:${address}`, undefined);
    return attempt(over, () => this.giveBack(authFailures, address, counted));
  }

  async countAnonymous(clientIp: string): Promise<LimitedDecision | undefined> {
    const address = this.addressOf(clientIp);
    const counted = await this.counter.count(this.compiled.anonymous, address, 1, 'memory');
    if ('failed' in counted) return undefined;
    const over = limitedBy(this.compiled.anonymous, counted);
    if (over !== undefined) this.limitedCallers.record(`ip:${address}`, undefined);
    return over;
  }

  /** Back to the store that counted it; a failure there leaves one count too many, never too few. */
  private async giveBack(policy: CompiledPolicy, address: string, counted: Counted): Promise<void> {
    if (added(counted)) await this.counter.count(policy, address, -1, 'memory', counted.store);
  }
}
