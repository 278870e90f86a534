/**
 * Authentication at the edge: turns the `Authorization` header into a verified Principal, or
 * into the problem to answer. One entry point for the authenticate stage; the verifiers it
 * composes each do one thing (jwt-verifier.ts, api-key.ts, api-key-store.ts).
 *
 * Accepted: `Authorization: Bearer <RFC 9068 access token>`, `Authorization: DPoP <token>` with
 * its `DPoP` proof (RFC 9449), and `Authorization: ApiKey <key>`. A token bound to a DPoP key
 * or a client certificate (`cnf`) is checked against the request by sender-constraint/.
 * A credential in the query string is refused with 400 ERR_CREDENTIAL_IN_URL, even beside a
 * valid header: it has already leaked into access logs, proxies and browser history, and a
 * 400 (not 401) tells the client its request is wrong, not its credential.
 */
import { hash as digest } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { RedisClient } from '../../shared/redis.ts';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { LRUCache } from 'lru-cache';
import type { HttpProblem } from '../../shared/errors.ts';
import { knownScopes, type Principal } from '../../shared/principal.ts';
import { verifyApiKey, type ApiKeyClaims } from './api-key.ts';
import { loadApiKeySigningKeys } from './api-key-signing-keys.ts';
import {
  createFileApiKeyStore,
  createRedisApiKeyStore,
  type ApiKeyRecord,
  type ApiKeyStore,
} from './api-key-store.ts';
import { credentialInUrl, invalidToken, keysUnavailable, unauthenticated } from './auth-problems.ts';
import { credentialParameter } from './credential-in-url.ts';
import { admitAll, countedOnce, judged, type VerifyGate } from './verify-gate.ts';
import { checkAuthConfig, type AuthConfig } from '../config/schema/identity.ts';
import { introspectionAnswerKeys, jwtTokens } from './jwt-tokens.ts';
import type { IntrospectionFetch } from './introspection/endpoint.ts';
import { introspectionMetrics } from './introspection/metrics.ts';
import { createOpaqueTokens, eitherKind, type BearerVerifier } from './introspection/opaque-tokens.ts';
import { loadAssertionKeys } from '../../shared/assertion-keys.ts';
import type { HmacKey } from '../../shared/data-dir-secrets.ts';
import { dpopRequired } from './sender-constraint/sender-problems.ts';
import {
  createSenderConstraints,
  type SenderConstraints,
  type SenderOutcome,
  type SenderRequest,
} from './sender-constraint/sender-check.ts';
import type { JwksFetch, KeySource } from './key-source.ts';

export { requireScopes } from './auth-problems.ts';
export type { VerifyGate } from './verify-gate.ts';
export type { SenderRequest } from './sender-constraint/sender-check.ts';

/**
 * What authenticate() decided; `reason` is safe for logs and the audit record. `dpopNonce`: a
 * fresh server nonce for the answer, when the proof used an older one (RFC 9449 §8.2).
 */
export type AuthOutcome =
  | { ok: true; principal: Principal; reason?: string; cacheHit: boolean; dpopNonce?: string }
  | { ok: false; problem: HttpProblem; reason: string };

export interface AuthenticatorDeps {
  /** Data dir holding the development issuer and, without Redis, the API-key records. */
  dataDir: string;
  /** Revocations and API-key records go here when given (fail fast: enableOfflineQueue false). */
  redis?: RedisClient;
  logger: Logger;
  /** Fetch for the JWKS URL (tests pass one trusting their CA); undici's by default. */
  fetch?: JwksFetch;
  /** Fetch for the introspection endpoint, likewise. */
  introspectionFetch?: IntrospectionFetch;
  /** The gateway's metrics, which introspection calls and cache hits are counted into. */
  registry?: Registry;
  /** Defaults to process.env; read for PORTICO_APIKEY_SIGNING_KEYS and the introspection secret. */
  env?: NodeJS.ProcessEnv;
  /** Epoch milliseconds; injectable so tests move time instead of waiting. */
  now?: () => number;
  /** The replicas' shared key ring, for DPoP nonces; else loaded when first needed. */
  assertionKeys?: readonly HmacKey[];
}

export interface Authenticator {
  /** `sender`: what a bound token is checked against; without it a bound token is refused. */
  authenticate(
    headers: IncomingHttpHeaders,
    url: string,
    gate?: VerifyGate,
    sender?: SenderRequest,
  ): Promise<AuthOutcome>;
  /**
   * The principal of the request's bearer token when that exact token verified before and is
   * still good (the verified-token cache), with nothing else to judge: no query string, the
   * header spelled `Bearer <token>`. Synchronous, for the common case; `undefined` means "ask
   * authenticate()", which decides everything else, this case included.
   */
  knownBearer(headers: IncomingHttpHeaders, url: string): Principal | undefined;
  /**
   * True once issuer keys are usable (always for a JWKS file or the development issuer): those
   * of JWTs, and those of signed introspection answers.
   */
  ready(): boolean;
  /** Every API key's record (no secret), for the dashboard; undefined when API keys are off. */
  apiKeyRecords?(): Promise<ApiKeyRecord[]> | undefined;
  close(): void;
}

/** Lets `apikey revoke` reach a gateway without Redis within a second. */
const FILE_STORE_POLL_MS = 1000;
const AUTHORIZATION = /^([A-Za-z]+) +([\x21-\x7e]+)$/;
/** `Bearer` in any case and one space: what knownBearer takes without the full parse. */
const BEARER_PREFIX = /^bearer (?! )/i;
const BEARER_LENGTH = 'Bearer '.length;
/** API keys whose signature verified, by digest: they skip the gate (revocation is still read). */
const VERIFIED_API_KEYS = 10_000;

/** Builds the authenticator once from validated config; throws on a config that cannot work. */
export function createAuthenticator(config: AuthConfig, deps: AuthenticatorDeps): Authenticator {
  const problems = checkAuthConfig(config);
  if (problems.length > 0) throw new Error(`invalid auth config:\n  ${problems.join('\n  ')}`);
  const { jwt, introspection } = config;
  const now = deps.now ?? Date.now;
  const env = deps.env ?? process.env;

  // Opaque tokens alone trust no JWT issuer, the development one included.
  const jwtVerifier =
    introspection === undefined || introspection.acceptJwt ? jwtTokens(jwt, deps, now) : undefined;
  const answerKeys =
    introspection === undefined
      ? undefined
      : introspectionAnswerKeys(introspection, jwt, jwtVerifier?.keys, deps, now);
  const opaque =
    introspection === undefined
      ? undefined
      : createOpaqueTokens(introspection, jwt, {
          logger: deps.logger,
          env,
          now,
          ...(deps.introspectionFetch === undefined ? {} : { fetch: deps.introspectionFetch }),
          ...(deps.redis === undefined ? {} : { redis: deps.redis }),
          ...(answerKeys === undefined ? {} : { answerKeys }),
          ...(deps.registry === undefined ? {} : { metrics: introspectionMetrics(deps.registry) }),
        });
  const bearer =
    jwtVerifier === undefined
      ? opaque!
      : opaque === undefined
        ? jwtVerifier
        : eitherKind(jwtVerifier, opaque);

  const apiKeys: ApiKeys | undefined = config.apiKeys.enabled
    ? {
        ring: loadApiKeySigningKeys(env, deps.dataDir),
        store:
          deps.redis === undefined
            ? createFileApiKeyStore(deps.dataDir, { pollMs: FILE_STORE_POLL_MS })
            : createRedisApiKeyStore(deps.redis),
      }
    : undefined;

  const senders = createSenderConstraints(config.dpop, {
    redis: deps.redis,
    now,
    nonceKeys: () => deps.assertionKeys ?? loadAssertionKeys(env, deps.dataDir),
  });
  return new EdgeAuthenticator(bearer, jwtVerifier?.keys, apiKeys, senders, deps.logger);
}

/** API keys, when enabled: the signing ring (loaded once per process) and the revocation store. */
interface ApiKeys {
  ring: ReturnType<typeof loadApiKeySigningKeys>;
  store: ApiKeyStore;
}

/** The authenticator proper: one method per kind of credential, on the parts built above. */
class EdgeAuthenticator implements Authenticator {
  /**
   * Verifications under way, by credential digest. A client that opens its connections with a
   * new token sends it many times at once: each would be counted against its address before
   * the first one verified, and enough of them lock the address out. One credential is counted
   * and verified once; the others wait for that outcome.
   */
  private readonly verifying = new Map<string, Promise<AuthOutcome>>();
  // The ring is loaded once per process, so a signature that verified stays verified.
  private readonly verifiedApiKeys = new LRUCache<string, ApiKeyClaims>({ max: VERIFIED_API_KEYS });

  private readonly verifier: BearerVerifier;
  /** The JWT issuer's keys; none when only opaque tokens are accepted. */
  private readonly keys: KeySource | undefined;
  private readonly apiKeys: ApiKeys | undefined;
  private readonly senders: SenderConstraints;
  private readonly logger: Logger;

  constructor(
    verifier: BearerVerifier,
    keys: KeySource | undefined,
    apiKeys: ApiKeys | undefined,
    senders: SenderConstraints,
    logger: Logger,
  ) {
    this.verifier = verifier;
    this.keys = keys;
    this.apiKeys = apiKeys;
    this.senders = senders;
    this.logger = logger;
  }

  knownBearer(headers: IncomingHttpHeaders, url: string): Principal | undefined {
    const authorization = headers.authorization;
    // Anything unusual (a query, which may carry a credential; another spelling) takes the
    // full path. A token found here is byte for byte one that passed it before.
    if (authorization === undefined || url.includes('?') || !BEARER_PREFIX.test(authorization))
      return undefined;
    const known = this.verifier.known(authorization.slice(BEARER_LENGTH));
    // A bound token has its binding to check, on every request: the full path does it.
    return known?.cnf === undefined ? known : undefined;
  }

  async authenticate(
    headers: IncomingHttpHeaders,
    url: string,
    anyGate = admitAll,
    sender?: SenderRequest,
  ): Promise<AuthOutcome> {
    const leaked = credentialParameter(url);
    if (leaked !== undefined)
      return { ok: false, problem: credentialInUrl(leaked), reason: 'credential in URL' };

    const authorization = headers.authorization;
    if (authorization === undefined || authorization.trim() === '') {
      const dpopOnly = sender?.binding?.require === 'dpop';
      const problem = dpopOnly ? dpopRequired(this.senders.algs) : unauthenticated();
      return { ok: false, problem, reason: 'no credentials' };
    }
    // A request is one guess however many of its parts are judged (token, proof, certificate).
    const gate = countedOnce(anyGate);
    const match = AUTHORIZATION.exec(authorization.trim());
    if (match === null) return judged(gate, authorization, refuse('malformed Authorization header'));
    const [, scheme, credential] = match as unknown as [string, string, string];
    switch (scheme.toLowerCase()) {
      case 'bearer':
        return this.bound(await this.bearer(credential, gate), credential, gate, (principal) =>
          this.senders.bearer(principal, sender),
        );
      case 'dpop':
        return this.dpop(credential, headers.dpop, gate, sender);
      case 'apikey':
        return this.apiKey(credential, gate);
      default:
        return judged(gate, authorization, refuse('unsupported authorization scheme'));
    }
  }

  apiKeyRecords(): Promise<ApiKeyRecord[]> | undefined {
    return this.apiKeys?.store.list();
  }

  ready(): boolean {
    return (this.keys?.ready() ?? true) && (this.verifier.ready?.() ?? true);
  }

  close(): void {
    this.verifier.close?.();
    this.keys?.close();
    this.apiKeys?.store.close();
  }

  private async bearer(token: string, gate: VerifyGate): Promise<AuthOutcome> {
    const known = this.verifier.known(token);
    if (known !== undefined) return { ok: true, principal: known, cacheHit: true };
    return this.once(digest('sha256', token, 'base64url'), gate, async () => {
      const result = await this.verifier.verify(token);
      if (result.ok) return { ok: true, principal: result.principal, cacheHit: result.cacheHit };
      if (result.kind === 'unavailable')
        return { ok: false, problem: keysUnavailable(), reason: result.reason };
      return { ok: false, problem: invalidToken(result.reason), reason: result.reason };
    });
  }

  /** A DPoP-bound token and its proof, new on every request: counted before it is verified. */
  private async dpop(
    token: string,
    proof: string | string[] | undefined,
    gate: VerifyGate,
    sender: SenderRequest | undefined,
  ): Promise<AuthOutcome> {
    const malformed = this.senders.proofHeaderProblem(proof);
    if (malformed !== undefined) return judged(gate, token, malformed);
    await gate(digest('sha256', proof as string, 'base64url'));
    return this.bound(await this.bearer(token, gate), token, gate, (principal) =>
      this.senders.dpop(principal, token, proof as string, sender),
    );
  }

  /** A verified token's binding checked; a refusal of it passes the gate as a guess. */
  private async bound(
    outcome: AuthOutcome,
    token: string,
    gate: VerifyGate,
    check: (principal: Principal) => SenderOutcome | Promise<SenderOutcome>,
  ): Promise<AuthOutcome> {
    if (!outcome.ok) return outcome;
    const binding = await check(outcome.principal);
    if (!binding.ok) return judged(gate, token, binding);
    return binding.nonce === undefined ? outcome : { ...outcome, dpopNonce: binding.nonce };
  }

  private async apiKey(presented: string, gate: VerifyGate): Promise<AuthOutcome> {
    const apiKeys = this.apiKeys;
    if (apiKeys === undefined) return judged(gate, presented, refuse('API keys are not accepted'));
    const id = digest('sha256', presented, 'base64url');
    const claims = this.verifiedApiKeys.get(id);
    if (claims !== undefined) return this.unlessRevoked(apiKeys.store, claims);
    return this.once(id, gate, () => {
      const check = verifyApiKey(apiKeys.ring, presented);
      if (!check.ok) return Promise.resolve(refuse(check.reason));
      this.verifiedApiKeys.set(id, check.claims);
      return this.unlessRevoked(apiKeys.store, check.claims);
    });
  }

  private async unlessRevoked(store: ApiKeyStore, claims: ApiKeyClaims): Promise<AuthOutcome> {
    let revoked: boolean;
    try {
      revoked = await store.isRevoked(claims.id);
    } catch (error) {
      // Fail closed: a revoked key must not slip through while the store is down.
      this.logger.error({ err: (error as Error).message }, 'API-key revocation store unavailable');
      return { ok: false, problem: keysUnavailable(), reason: 'revocation store unavailable' };
    }
    if (revoked) return refuse('API key revoked');
    const principal: Principal = {
      subject: claims.id,
      customerId: claims.cid,
      scopes: knownScopes(claims.scp),
      authMethod: 'apikey',
      keyId: claims.id,
    };
    return { ok: true, principal, cacheHit: false };
  }

  /** Counts and judges one credential once, however many requests carry it at the same time. */
  private async once(id: string, gate: VerifyGate, judge: () => Promise<AuthOutcome>): Promise<AuthOutcome> {
    const running = this.verifying.get(id);
    if (running !== undefined) {
      try {
        return await running;
      } catch {
        // Refused at its own gate (its address is over the limit): this one passes its own.
      }
    }
    const judging = gate(id).then(judge);
    this.verifying.set(id, judging);
    try {
      return await judging;
    } finally {
      if (this.verifying.get(id) === judging) this.verifying.delete(id);
    }
  }
}

function refuse(reason: string): AuthOutcome {
  return { ok: false, problem: invalidToken(reason), reason };
}
