/**
 * The authenticate stage: turns the request's credential into `ctx.upstream.principal`, or answers
 * 401/403/503 before anything else of the request is used. Routes written `auth: none` pass
 * without a principal (and the proxy still strips whatever identity a client claimed).
 *
 * Failed authentication is counted per client address by the rate limiter's built-in policy:
 * every credential that is not known good is counted atomically before it is verified, and
 * given back when it verifies, so an address over the limit gets 429 without its guesses being
 * verified (guessing costs the attacker, not the gateway), while a credential verified before
 * is never locked out by what others send from its address.
 *
 * A bearer token verified before is taken from the verified-token cache without the full parse
 * (Authenticator.knownBearer), the common case: most requests carry a token seen before.
 * A bound token (DPoP, client certificate) is judged in full on every request, with what its
 * binding is checked against: the method, the URI the client addressed, the connection's
 * client certificate and the route's `tokenBinding`. On a route with server nonces, a proof that
 * used an older nonce gets the current one on its answer (`DPoP-Nonce`, whatever the status).
 */
import type { Authenticator, SenderRequest } from '../identity/authenticate.ts';
import { requestHtu } from '../identity/sender-constraint/htu.ts';
import { presentedThumbprint } from '../identity/sender-constraint/certificate-binding.ts';
import type { TrustProxy } from '../foundation/trust-proxy.ts';
import { rateLimitProblem } from '../rate-limit/headers.ts';
import type { AuthAttempt, RateLimiter } from '../rate-limit/limiter.ts';
import type { RateLimitGate } from './rate-limit.ts';
import type { GatewayContext, Next, Stage } from '../pipeline/context.ts';

export interface AuthenticateStageDeps {
  authenticator: Authenticator;
  limiter: RateLimiter;
  /** The rate-limit stage's gate: a request without a credential counts as anonymous. */
  gate?: RateLimitGate;
  /** `proxy.trustProxy`: whose forwarded scheme and host name the URI a DPoP proof is for. */
  trustProxy?: TrustProxy;
}

/** The audit facts of the two outcomes that need no judging; never changed once set. */
const NONE = Object.freeze({ outcome: 'none' as const });
const CACHED = Object.freeze({ outcome: 'ok' as const, reason: 'cached' });

export function createAuthenticateStage(deps: AuthenticateStageDeps): Stage {
  // A plain function for the two common cases (no async frame, promise or awaits of its own);
  // everything else is judged in full by judge().
  return function authenticate(ctx, next) {
    if (ctx.upstream.route?.auth === 'none') {
      ctx.facts.auth = NONE;
      return next();
    }
    const known = deps.authenticator.knownBearer(ctx.req.headers, ctx.target);
    if (known !== undefined) {
      ctx.upstream.principal = known;
      ctx.facts.auth = CACHED;
      return next();
    }
    return judge(ctx, next, deps);
  };
}

/** Refusals that leave a credential counted as a guess: a bad token, a bad DPoP proof. */
const GUESSES: ReadonlySet<string> = new Set(['ERR_INVALID_TOKEN', 'ERR_INVALID_DPOP_PROOF']);

/** What a bound token's binding is checked against, read from the request only when needed. */
function sender(ctx: GatewayContext, deps: AuthenticateStageDeps): SenderRequest {
  const { req } = ctx;
  return {
    method: req.method ?? '',
    get htu() {
      return requestHtu(req, ctx.upstream.authority, ctx.target, deps.trustProxy ?? false);
    },
    certificateThumbprint: () => presentedThumbprint(req.socket),
    binding: ctx.upstream.route?.tokenBinding,
  };
}

async function judge(ctx: GatewayContext, next: Next, deps: AuthenticateStageDeps): Promise<void> {
  let attempt: AuthAttempt | undefined;
  const gate = async (fingerprint: string) => {
    attempt = await deps.limiter.countAuthAttempt(ctx.upstream.clientIp, fingerprint);
    if (attempt.refusal === undefined) return;
    ctx.facts.auth = { outcome: 'refused', reason: 'too many failed authentications from this address' };
    throw rateLimitProblem(attempt.refusal);
  };
  const outcome = await deps.authenticator.authenticate(ctx.req.headers, ctx.target, gate, sender(ctx, deps));
  // Only a credential that was sent and refused stays counted as a guess, and is remembered.
  if (attempt !== undefined) {
    if (!outcome.ok && GUESSES.has(outcome.problem.code)) attempt.failed();
    else await attempt.refund();
  }
  if (!outcome.ok) {
    const unavailable = outcome.problem.status === 503;
    ctx.facts.auth = { outcome: unavailable ? 'unavailable' : 'refused', reason: outcome.reason };
    // No credential at all: one of the requests the anonymous limit counts (rateLimits.anonymous).
    if (outcome.problem.code === 'ERR_UNAUTHENTICATED')
      throw (await deps.gate?.anonymous(ctx)) ?? outcome.problem;
    throw outcome.problem;
  }
  ctx.upstream.principal = outcome.principal;
  ctx.facts.auth = outcome.cacheHit ? CACHED : { outcome: 'ok' };
  await next();
  // Set on the way back, after the cache stored its copy: a nonce is for this client, now.
  if (outcome.dpopNonce !== undefined && ctx.response !== undefined)
    ctx.response.headers['dpop-nonce'] = outcome.dpopNonce;
}
