/**
 * Builds the opaque-token side of the authenticator from `auth.introspection`, and the choice
 * between the two kinds of bearer token when JWTs are accepted too.
 */
import { decodeProtectedHeader } from 'jose/decode/protected_header';
import type { Logger } from 'pino';
import { fetch as undiciFetch } from '../../../shared/undici-parts.ts';
import type { Principal } from '../../../shared/principal.ts';
import type { RedisClient } from '../../../shared/redis.ts';
import type { JwtConfig } from '../../config/schema/identity.ts';
import type { IntrospectionConfig } from '../../config/schema/introspection.ts';
import type { TokenResult } from '../claims/token-result.ts';
import { answerJudge } from './answer.ts';
import { loadClientCredential } from './client-credential.ts';
import { introspectionEndpoint, type IntrospectionFetch } from './endpoint.ts';
import type { IntrospectionMetrics } from './metrics.ts';
import { watchRevocations, type Revocations } from './revocations.ts';
import { signedAnswerReader, type AnswerKeys } from './signed-answer.ts';
import { createIntrospectionVerifier, type IntrospectionVerifier } from './verifier.ts';

export interface OpaqueTokenDeps {
  logger: Logger;
  env: NodeJS.ProcessEnv;
  now: () => number;
  fetch?: IntrospectionFetch;
  /** Revocations through the gateway reach every replica by it; without it there are none. */
  redis?: RedisClient;
  /** The issuer's keys, for answers asked for as signed JWTs (`jwtResponse`); closed with these. */
  answerKeys?: AnswerKeys;
  metrics?: IntrospectionMetrics;
}

export function createOpaqueTokens(
  config: IntrospectionConfig,
  jwt: JwtConfig,
  deps: OpaqueTokenDeps,
): BearerVerifier {
  const signed = signedAnswers(config, jwt, deps);
  const introspect = introspectionEndpoint({
    url: config.endpoint,
    credential: loadClientCredential(config, deps.env),
    fetch: deps.fetch ?? undiciFetch,
    timeoutMs: config.timeoutMs,
    logger: deps.logger,
    ...(signed === undefined ? {} : { signed }),
  });
  deps.logger.info(
    {
      issuer: config.issuer,
      audience: config.audience,
      endpoint: config.endpoint,
      clientAuth: config.clientAuth,
      acceptJwt: config.acceptJwt,
      jwtResponse: config.jwtResponse,
      customerClaim: jwt.customerClaim,
    },
    'introspecting opaque access tokens at the configured endpoint',
  );
  if (deps.redis === undefined)
    deps.logger.warn(
      'opaque tokens can be revoked only at the identity provider: no Redis (REDIS_URL) to share revocations',
    );
  // Not waited for at start, unlike the cache bus (build-cache.ts), which bypasses the cache until
  // it is subscribed. Here nothing is trusted on the strength of a subscription not yet made: a
  // cached answer costs one EXISTS instead (verifier.ts), answers cached before the first
  // subscription are forgotten when it comes (revocations.ts), and the cache starts empty, so
  // the window costs a few reads of Redis, not safety, and Redis being slow delays no start.
  let revocations: Revocations | undefined;
  const verifier: IntrospectionVerifier = createIntrospectionVerifier({
    ...(deps.redis === undefined
      ? {}
      : {
          revocations: (revocations = watchRevocations(
            deps.redis,
            { revoked: (id) => verifier.forget(id), missed: () => verifier.forgetAll() },
            deps.logger,
          )),
        }),
    introspect,
    judge: answerJudge({
      issuer: config.issuer,
      audience: config.audience,
      customerClaim: jwt.customerClaim,
      clockSkewSeconds: jwt.clockSkewSeconds,
      maxLifetimeSeconds: jwt.maxLifetimeSeconds,
    }),
    cacheMaxSeconds: config.cacheMaxSeconds,
    negativeCacheSeconds: config.negativeCacheSeconds,
    cacheMaxEntries: config.cacheMaxEntries,
    maxTokenBytes: jwt.maxTokenBytes,
    now: deps.now,
    ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
  });
  return {
    known: verifier.known,
    verify: verifier.verify,
    ready: () => deps.answerKeys?.ready() ?? true,
    close: () => {
      revocations?.close();
      deps.answerKeys?.close();
    },
  };
}

/** The reader of answers signed as RFC 9701 says, when `jwtResponse` asks for them. */
function signedAnswers(config: IntrospectionConfig, jwt: JwtConfig, deps: OpaqueTokenDeps) {
  if (!config.jwtResponse) return undefined;
  if (deps.answerKeys === undefined)
    throw new Error('auth.introspection.jwtResponse: no keys to verify signed answers with');
  return signedAnswerReader({
    keys: deps.answerKeys,
    issuer: config.issuer,
    clientId: config.clientId,
    algorithms: jwt.algorithms,
    clockSkewSeconds: jwt.clockSkewSeconds,
    now: deps.now,
  });
}

/** What the authenticator asks of a bearer-token verifier, whichever kind it verifies. */
export interface BearerVerifier {
  known(token: string): Principal | undefined;
  verify(token: string): Promise<TokenResult>;
  /** False while keys it needs are not loaded (signed introspection answers); true if none. */
  ready?(): boolean;
  /** Stops what it runs in the background (a subscription). */
  close?(): void;
}

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * JWTs and opaque tokens of one issuer, side by side: a token that parses as a JWS is a JWT
 * and is verified here (a JWT the IdP would not introspect anyway), any other is introspected.
 * A forged "JWT" therefore never costs an introspection call.
 */
export function eitherKind(jwt: BearerVerifier, opaque: BearerVerifier): BearerVerifier {
  return {
    // Shape only on the fast path: a token in either cache was sorted the same way before.
    known: (token) => (COMPACT_JWS.test(token) ? jwt.known(token) : opaque.known(token)),
    verify: (token) => (parsesAsJws(token) ? jwt.verify(token) : opaque.verify(token)),
    ready: () => opaque.ready?.() ?? true,
    close: () => opaque.close?.(),
  };
}

function parsesAsJws(token: string): boolean {
  if (!COMPACT_JWS.test(token)) return false;
  try {
    decodeProtectedHeader(token);
    return true;
  } catch {
    return false;
  }
}
