/**
 * The JWT side of authentication: which issuer's access tokens are trusted (the configured
 * identity provider, or the development issuer of the data dir), where its keys come from
 * (a JWKS URL or file), and the verifier built on them (jwt-verifier.ts).
 */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { fetch as undiciFetch } from '../../shared/undici-parts.ts';
import type { AuthConfig } from '../config/schema/identity.ts';
import type { IntrospectionConfig } from '../config/schema/introspection.ts';
import { loadOrCreateDevIssuer } from './dev-issuer.ts';
import { createJwtVerifier } from './jwt-verifier.ts';
import {
  createRemoteKeySource,
  createStaticKeySource,
  type JwksFetch,
  type KeySource,
} from './key-source.ts';

/** What the JWT side needs of the authenticator's deps. */
export interface JwtTokenDeps {
  /** Data dir holding the development issuer. */
  dataDir: string;
  logger: Logger;
  /** Fetch for the JWKS URL (tests pass one trusting their CA); undici's by default. */
  fetch?: JwksFetch;
}

/** Keys are due for a background refresh after this; jose's remote set uses 10 min. */
const KEYS_FRESH_MS = 5 * 60 * 1000;

/** The JWT verifier of the trusted issuer, and its keys (for readiness and close). */
export function jwtTokens(jwt: AuthConfig['jwt'], deps: JwtTokenDeps, now: () => number) {
  const { keys, issuer, audience } = trustedIssuer(jwt, deps, now);
  const verifier = createJwtVerifier({
    issuer,
    audience,
    algorithms: jwt.algorithms,
    clockSkewSeconds: jwt.clockSkewSeconds,
    maxLifetimeSeconds: jwt.maxLifetimeSeconds,
    maxTokenBytes: jwt.maxTokenBytes,
    customerClaim: jwt.customerClaim,
    cacheMaxEntries: jwt.cacheMaxEntries,
    keys,
    now,
  });
  return { known: verifier.known, verify: verifier.verify, keys };
}

/** The JWKS of `auth.jwt.jwksFile`; a file missing or not JSON is refused by that key. */
function readJwksFile(file: string): Parameters<typeof createStaticKeySource>[0] {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new Error(`auth.jwt.jwksFile: cannot read ${file} as a JWKS: ${reason}`, { cause: error });
  }
}

/**
 * The issuer whose access tokens are accepted, its keys and audience: the configured identity
 * provider, or the development issuer of the data dir. Says which at start, once.
 */
function trustedIssuer(
  jwt: AuthConfig['jwt'],
  deps: JwtTokenDeps,
  now: () => number,
): { keys: KeySource; issuer: string; audience: string | string[] } {
  if (jwt.jwksUrl === undefined && jwt.jwksFile === undefined) {
    const dev = loadOrCreateDevIssuer(deps.dataDir);
    deps.logger.warn(
      { issuer: dev.issuer, dataDir: deps.dataDir },
      'trusting the development issuer of the data dir (no auth.jwt.jwksUrl or jwksFile configured)',
    );
    return { keys: createStaticKeySource(dev.jwks), issuer: dev.issuer, audience: dev.audience };
  }
  const keys = issuerKeys(jwt, jwt, deps, now);
  // checkAuthConfig made sure both are set with an external issuer.
  const issuer = jwt.issuer!;
  const audience = jwt.audience!;
  deps.logger.info(
    { issuer, audience, keys: jwt.jwksUrl ?? jwt.jwksFile, customerClaim: jwt.customerClaim },
    'trusting access tokens of the configured issuer',
  );
  return { keys, issuer, audience };
}

/** An issuer's keys from its JWKS URL or file, kept as auth.jwt says (freshness, cooldown). */
function issuerKeys(
  where: { jwksUrl?: string | undefined; jwksFile?: string | undefined },
  jwt: AuthConfig['jwt'],
  deps: JwtTokenDeps,
  now: () => number,
): KeySource {
  if (where.jwksUrl === undefined) return createStaticKeySource(readJwksFile(where.jwksFile!));
  return createRemoteKeySource({
    url: where.jwksUrl,
    fetch: deps.fetch ?? undiciFetch,
    logger: deps.logger,
    now,
    freshMs: KEYS_FRESH_MS,
    staleMaxAgeMs: jwt.staleKeysMaxAgeSeconds * 1000,
    cooldownMs: jwt.refetchCooldownSeconds * 1000,
  });
}

/**
 * The keys signed introspection answers are verified with (`jwtResponse`): those of
 * auth.introspection.jwksUrl, else auth.jwt's. `shared`, the JWT verifier's keys when JWTs are
 * accepted too, serves both (one cache, one fetcher); closing them stays the JWT side's.
 */
export function introspectionAnswerKeys(
  introspection: IntrospectionConfig,
  jwt: AuthConfig['jwt'],
  shared: KeySource | undefined,
  deps: JwtTokenDeps,
  now: () => number,
): KeySource | undefined {
  if (!introspection.jwtResponse) return undefined;
  if (introspection.jwksUrl !== undefined)
    return issuerKeys({ jwksUrl: introspection.jwksUrl }, jwt, deps, now);
  if (shared !== undefined) return { ...shared, close: () => {} };
  return issuerKeys(jwt, jwt, deps, now);
}
