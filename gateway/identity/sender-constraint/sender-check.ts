/**
 * Whether the request proves it is the sender its access token was bound to: the rules of
 * RFC 9449 (DPoP) and RFC 8705 (certificate-bound tokens) on a principal already verified.
 * It reads the binding from the principal's `cnf`, whichever verifier made it (a JWT's claim,
 * an introspection answer's member), so a bound token is checked the same way from either.
 *
 * - `Authorization: DPoP`: the token must be DPoP-bound, the one `DPoP` proof must hold
 *   (dpop-proof.ts), its key must be the one the token is bound to (`cnf.jkt`), and its `jti`
 *   must be new everywhere (proof-replay.ts).
 * - `Authorization: Bearer`: a DPoP-bound token is refused (RFC 9449 §7.2: sent as a bearer
 *   token it would be one), as is any token on a route that requires DPoP.
 * - Either scheme: a certificate-bound token needs its certificate on the connection, and a
 *   route that requires certificate binding takes no other token.
 */
import type { HmacKey } from '../../../shared/data-dir-secrets.ts';
import type { HttpProblem } from '../../../shared/errors.ts';
import type { Principal } from '../../../shared/principal.ts';
import type { RedisClient } from '../../../shared/redis.ts';
import type { DpopConfig } from '../../config/schema/identity.ts';
import type { TokenBinding } from '../../config/schema/token-binding.ts';
import { DpopNonces } from './dpop-nonce.ts';
import { verifyDpopProof } from './dpop-proof.ts';
import { createMemoryProofReplay, createRedisProofReplay, type ProofReplay } from './proof-replay.ts';
import {
  certificateMismatch,
  invalidProof,
  replayUnavailable,
  unboundToken,
  useNonce,
} from './sender-problems.ts';

/** What the binding checks need of the request, beyond its headers. */
export interface SenderRequest {
  method: string;
  /** The URI the client addressed, normalised (htu.ts); undefined when it names none usable. */
  htu: string | undefined;
  /** The SHA-256 thumbprint of the connection's client certificate, when it presented one. */
  certificateThumbprint: () => string | undefined;
  /** The route's `tokenBinding`. */
  binding: TokenBinding | undefined;
}

export type SenderRefusal = { ok: false; problem: HttpProblem; reason: string };
/** `nonce`: a fresh server nonce to hand the client on the answer (RFC 9449 §8.2). */
export type SenderOutcome = { ok: true; nonce?: string } | SenderRefusal;

const OK: SenderOutcome = Object.freeze({ ok: true });

export interface SenderConstraintDeps {
  replay: ProofReplay;
  /** The server nonces, made when a route with `tokenBinding.dpopNonce` first needs them. */
  nonces: () => DpopNonces;
  now: () => number;
}

/**
 * The checks, with proofs remembered in Redis when there is one (every replica sees every
 * proof), else in this process; nonces keyed by the replicas' shared ring, read when first needed.
 */
export function createSenderConstraints(
  config: DpopConfig,
  deps: { redis: RedisClient | undefined; now: () => number; nonceKeys: () => readonly HmacKey[] },
): SenderConstraints {
  const { redis, now } = deps;
  let nonces: DpopNonces | undefined;
  return new SenderConstraints(config, {
    replay: redis === undefined ? createMemoryProofReplay(now) : createRedisProofReplay(redis, now),
    nonces: () => (nonces ??= new DpopNonces(deps.nonceKeys(), config.nonceLifetimeSeconds, now)),
    now,
  });
}

export class SenderConstraints {
  /** The proof algorithms accepted, in the order the challenges announce them. */
  readonly algs: readonly string[];
  private readonly algorithms: ReadonlySet<string>;
  private readonly config: DpopConfig;
  private readonly deps: SenderConstraintDeps;

  constructor(config: DpopConfig, deps: SenderConstraintDeps) {
    this.config = config;
    this.algs = [...config.algorithms];
    this.algorithms = new Set(config.algorithms);
    this.deps = deps;
  }

  /** A refusal of the proof header before any work: absent, or more than one. */
  proofHeaderProblem(proof: string | string[] | undefined): SenderRefusal | undefined {
    if (proof === undefined || proof === '') return this.proofRefused('missing DPoP proof');
    // Node joins repeated fields with ", "; a compact JWS has neither character.
    if (Array.isArray(proof) || proof.includes(',')) return this.proofRefused('more than one DPoP proof');
    return undefined;
  }

  /** Checks a `Bearer` token's binding: a DPoP-bound one is refused, a certificate-bound one checked. */
  bearer(principal: Principal, request: SenderRequest | undefined): SenderOutcome {
    const cnf = principal.cnf;
    if (cnf?.jkt !== undefined) return this.tokenRefused('DPoP-bound token sent as Bearer');
    if (request?.binding?.require === 'dpop')
      return this.tokenRefused('this route requires a DPoP-bound token');
    return this.certificate(principal, request);
  }

  /** Checks a `DPoP` token and its proof; counted as a guess by the caller before it runs. */
  async dpop(
    principal: Principal,
    token: string,
    proof: string,
    request: SenderRequest | undefined,
  ): Promise<SenderOutcome> {
    const jkt = principal.cnf?.jkt;
    if (jkt === undefined) return this.tokenRefused('token is not DPoP-bound');
    if (request === undefined) return this.unchecked();
    const certificate = this.certificate(principal, request);
    if (!certificate.ok) return certificate;
    const nonces = request.binding?.dpopNonce === true ? this.deps.nonces() : undefined;
    const maxAgeSeconds = this.config.proofMaxAgeSeconds;
    const result = await verifyDpopProof(proof, {
      method: request.method,
      htu: request.htu,
      accessToken: token,
      algorithms: this.algorithms,
      maxAgeSeconds,
      clockSkewSeconds: this.config.clockSkewSeconds,
      nowSeconds: this.deps.now() / 1000,
      nonce: nonces === undefined ? undefined : (nonce) => nonces.check(nonce),
    });
    if (!result.ok) {
      if (result.nonce !== undefined && nonces !== undefined)
        return { ok: false, problem: useNonce(nonces.current(), this.algs), reason: result.reason };
      return this.proofRefused(result.reason);
    }
    if (result.jkt !== jkt) return this.proofRefused("DPoP proof key is not the token's key");
    const use = await this.deps.replay.use(jkt, result.jti, (result.iat + maxAgeSeconds) * 1000);
    if (use === 'replayed') return this.proofRefused('DPoP proof already used');
    if (use === 'unavailable')
      return { ok: false, problem: replayUnavailable(), reason: 'DPoP proof replay store unavailable' };
    // Ahead of expiry: a client that keeps calling never meets use_dpop_nonce (dpop-nonce.ts).
    const renewal =
      nonces === undefined || result.nonce === undefined ? undefined : nonces.renewal(result.nonce);
    return renewal === undefined ? OK : { ok: true, nonce: renewal };
  }

  private certificate(principal: Principal, request: SenderRequest | undefined): SenderOutcome {
    const bound = principal.cnf?.['x5t#S256'];
    if (bound === undefined) {
      if (request?.binding?.require !== 'certificate') return OK;
      const reason = 'this route requires a certificate-bound token';
      return { ok: false, problem: certificateMismatch(reason), reason };
    }
    if (request === undefined) return this.unchecked();
    const presented = request.certificateThumbprint();
    if (presented === bound) return OK;
    const reason =
      presented === undefined
        ? 'token is bound to a client certificate and none was presented'
        : 'token is bound to another client certificate';
    return { ok: false, problem: certificateMismatch(reason), reason };
  }

  /** A bound token where nothing of the request can be checked (a caller that gave no facts). */
  private unchecked(): SenderOutcome {
    return this.tokenRefused('bound token where its binding cannot be checked');
  }

  private tokenRefused(reason: string): SenderOutcome {
    return { ok: false, problem: unboundToken(reason, this.algs), reason };
  }

  private proofRefused(reason: string): SenderRefusal {
    return { ok: false, problem: invalidProof(reason, this.algs), reason };
  }
}
