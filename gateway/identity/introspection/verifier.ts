/**
 * Opaque access tokens, judged by the identity provider's introspection endpoint and
 * remembered by the SHA-256 digest of the token (never the token): an active answer until the
 * earlier of the token's `exp` and `cacheMaxSeconds`, an inactive one for
 * `negativeCacheSeconds`. However many requests bring a new token at once, it is introspected
 * once: the others wait for that answer. The endpoint down is a 503 for tokens not yet known,
 * never an "allow"; tokens known keep working until their answer expires.
 *
 * With revocations through Redis, a remembered active answer is trusted as it is only while the
 * revocation channel is live (revocations.ts): otherwise a revocation may be on its way, so the
 * answer counts once the token's revocation record is read and absent, and the record unreadable
 * is a 503, as for a token not yet known.
 */
import { hash as digest } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Principal } from '../../../shared/principal.ts';
import type { TokenResult } from '../claims/token-result.ts';
import type { AnswerMeaning } from './answer.ts';
import type { IntrospectionCall } from './endpoint.ts';
import { NO_INTROSPECTION_METRICS, type CallOutcome, type IntrospectionMetrics } from './metrics.ts';
import type { Revocations } from './revocations.ts';

export interface IntrospectionVerifierOptions {
  introspect: (token: string) => Promise<IntrospectionCall>;
  judge: (answer: Record<string, unknown>, now: number) => AnswerMeaning;
  cacheMaxSeconds: number;
  negativeCacheSeconds: number;
  cacheMaxEntries: number;
  maxTokenBytes: number;
  now: () => number;
  /** Revocations made through the gateway (Redis); none without Redis. */
  revocations?: Revocations;
  metrics?: IntrospectionMetrics;
}

/** A remembered answer: the principal of an active token, or why it was refused. */
type Remembered =
  { principal: Principal; until: number } | { principal?: undefined; reason: string; until: number };

export interface IntrospectionVerifier {
  /** The principal of a token with a remembered active answer; synchronous, no call. */
  known: (token: string) => Principal | undefined;
  verify: (token: string) => Promise<TokenResult>;
  /** Drops the remembered answer of the token with this digest (it was revoked). */
  forget: (tokenDigest: string) => void;
  /** Drops every remembered answer (revocations may have been missed). */
  forgetAll: () => void;
}

export const tokenDigest = (token: string): string => digest('sha256', token, 'base64url');

export function createIntrospectionVerifier(options: IntrospectionVerifierOptions): IntrospectionVerifier {
  const { now } = options;
  const metrics = options.metrics ?? NO_INTROSPECTION_METRICS;
  const answers = new LRUCache<string, Remembered>({ max: options.cacheMaxEntries });
  const inFlight = new Map<string, Promise<TokenResult>>();
  // Without Redis there are no revocations through the gateway to miss.
  const heardEverything = () => options.revocations?.live() ?? true;

  function remembered(id: string): Remembered | undefined {
    const entry = answers.get(id);
    if (entry === undefined) return undefined;
    if (now() < entry.until) return entry;
    answers.delete(id);
    return undefined;
  }

  /** A remembered active answer while revocations may have gone unheard: the record decides. */
  async function confirmed(id: string, principal: Principal): Promise<TokenResult> {
    const revoked = await options.revocations?.isRevoked(id).catch(() => undefined);
    if (revoked === undefined)
      return { ok: false, kind: 'unavailable', reason: 'revocation store unavailable' };
    if (!revoked) return { ok: true, principal, cacheHit: true };
    answers.delete(id);
    return { ok: false, kind: 'invalid', reason: 'token revoked' };
  }

  /** One call, counted by how it ended and timed (the call alone: the revocation read overlaps it). */
  async function introspect(id: string, token: string): Promise<TokenResult> {
    const started = performance.now();
    let seconds = 0;
    const call = options.introspect(token).then((answer) => {
      seconds = (performance.now() - started) / 1000;
      return answer;
    });
    const result = await judgeCall(id, call);
    metrics.called(outcomeOf(result), seconds);
    return result;
  }

  async function judgeCall(id: string, calling: Promise<IntrospectionCall>): Promise<TokenResult> {
    const { revocations } = options;
    // Asked side by side: the revocation record costs no time beside the endpoint's answer.
    const [call, revoked] = await Promise.all([
      calling,
      revocations === undefined ? false : revocations.isRevoked(id).catch(() => undefined),
    ]);
    // Fail closed: a revoked token must not slip through while its record cannot be read.
    if (revoked === undefined)
      return { ok: false, kind: 'unavailable', reason: 'revocation store unavailable' };
    if (!call.ok) return { ok: false, kind: 'unavailable', reason: call.reason };
    const at = now();
    // A revocation heard while the endpoint was answering counts too.
    const meaning: AnswerMeaning =
      revoked || revocations?.heardOf(id) === true
        ? { ok: false, reason: 'token revoked' }
        : options.judge(call.answer, at);
    if (!meaning.ok) {
      if (options.negativeCacheSeconds > 0)
        answers.set(id, { reason: meaning.reason, until: at + options.negativeCacheSeconds * 1000 });
      return { ok: false, kind: 'invalid', reason: meaning.reason };
    }
    const until = Math.min(meaning.expiresAt ?? Infinity, at + options.cacheMaxSeconds * 1000);
    if (until > at) answers.set(id, { principal: meaning.principal, until });
    return { ok: true, principal: meaning.principal, cacheHit: false };
  }

  return {
    known(token) {
      if (token.length > options.maxTokenBytes || !heardEverything()) return undefined;
      const principal = remembered(tokenDigest(token))?.principal;
      if (principal !== undefined) metrics.remembered();
      return principal;
    },

    async verify(token) {
      if (token.length > options.maxTokenBytes)
        return { ok: false, kind: 'invalid', reason: 'token too large' };
      const id = tokenDigest(token);
      const entry = remembered(id);
      if (entry !== undefined) metrics.remembered();
      if (entry?.principal !== undefined)
        return heardEverything()
          ? { ok: true, principal: entry.principal, cacheHit: true }
          : confirmed(id, entry.principal);
      if (entry !== undefined) return { ok: false, kind: 'invalid', reason: entry.reason };
      const running = inFlight.get(id);
      if (running !== undefined) return running;
      const call = introspect(id, token);
      inFlight.set(id, call);
      try {
        return await call;
      } finally {
        inFlight.delete(id);
      }
    },

    forget(id) {
      answers.delete(id);
    },

    forgetAll() {
      answers.clear();
    },
  };
}

function outcomeOf(result: TokenResult): CallOutcome {
  if (result.ok) return 'active';
  return result.kind === 'unavailable' ? 'error' : 'inactive';
}
