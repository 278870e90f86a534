/**
 * `auth.introspection`: opaque (reference) access tokens, judged by asking the identity
 * provider's introspection endpoint (RFC 7662) instead of verifying a signature here.
 */
import { Type, type Static } from '@sinclair/typebox';

export const INTROSPECTION_CLIENT_AUTH = ['client_secret_basic', 'private_key_jwt'] as const;
/** Signature algorithms for the private_key_jwt assertion (RFC 7523): asymmetric ones only. */
export const ASSERTION_ALGORITHMS = ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'] as const;
/**
 * The most any gateway may be configured with, whatever its config says: a revocation record
 * outlives every answer a replica can have cached (introspection/revocations.ts).
 */
export const CACHE_MAX_SECONDS_CEILING = 3600;
export const TIMEOUT_MS_CEILING = 30_000;

export const IntrospectionConfigSchema = Type.Object(
  {
    endpoint: Type.String({
      format: 'uri',
      description:
        "The identity provider's introspection endpoint. Must be https (plain http only for loopback hosts): answers read in clear could be forged, and the client credential would travel in clear.",
    }),
    issuer: Type.String({
      minLength: 1,
      description:
        'The identity provider (its issuer identifier): an answer naming another `iss` is refused, and a private_key_jwt assertion names it as its `aud`.',
    }),
    audience: Type.Union(
      [Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })],
      {
        description:
          'Accepted `aud` value(s): an answer must name at least one. An answer without `aud`, or for another audience, is refused (a token meant for another API must not work here).',
      },
    ),
    clientId: Type.String({
      minLength: 1,
      description: 'The client id the gateway authenticates with at the introspection endpoint.',
    }),
    clientAuth: Type.Union(
      INTROSPECTION_CLIENT_AUTH.map((method) => Type.Literal(method)),
      {
        default: 'client_secret_basic',
        description:
          'How the gateway authenticates: `client_secret_basic` (the secret from clientSecretFile or PORTICO_INTROSPECTION_CLIENT_SECRET) or `private_key_jwt` (an assertion signed with the key of privateKeyFile or PORTICO_INTROSPECTION_PRIVATE_KEY, RFC 7523). Neither secret is ever logged.',
      },
    ),
    clientSecretFile: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'File holding the client secret (surrounding whitespace trimmed); else PORTICO_INTROSPECTION_CLIENT_SECRET.',
      }),
    ),
    privateKeyFile: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'File holding the private key for private_key_jwt, as PKCS#8 PEM or a private JWK; else PORTICO_INTROSPECTION_PRIVATE_KEY.',
      }),
    ),
    privateKeyAlgorithm: Type.Union(
      ASSERTION_ALGORITHMS.map((alg) => Type.Literal(alg)),
      { default: 'ES256', description: 'Signature algorithm of the private_key_jwt assertion.' },
    ),
    privateKeyId: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          '`kid` of the assertion header, when the identity provider holds several keys of the client.',
      }),
    ),
    acceptJwt: Type.Boolean({
      default: false,
      description:
        'Also accept JWT access tokens (auth.jwt, which then needs jwksUrl or jwksFile): a bearer token that parses as a JWS is verified as a JWT, any other is introspected. When false, every bearer token is introspected.',
    }),
    jwtResponse: Type.Boolean({
      default: false,
      description:
        "Ask for answers as signed JWTs (RFC 9701: `Accept: application/token-introspection+jwt`) and accept no other: the signature by the issuer's keys (jwksUrl, else auth.jwt's) with an algorithm of auth.jwt.algorithms, `typ` token-introspection+jwt, `iss` the issuer, `aud` the clientId, `iat` within auth.jwt.clockSkewSeconds of now; the answer is the `token_introspection` claim. A plain JSON answer or one failing a check is a 503 (the endpoint misbehaves), never a refusal nor an allow.",
    }),
    jwksUrl: Type.Optional(
      Type.String({
        format: 'uri',
        description:
          "The identity provider's JWKS, for jwtResponse; https (plain http only for loopback hosts). Default: auth.jwt.jwksUrl or jwksFile, when auth.jwt.issuer is this issuer (one key cache then serves both).",
      }),
    ),
    cacheMaxSeconds: Type.Integer({
      minimum: 0,
      maximum: CACHE_MAX_SECONDS_CEILING,
      default: 300,
      description:
        "Longest time an active answer is reused (never past the token's `exp`): also how long a token revoked at the identity provider, but not through Portico, may go on working. 0: ask on every request.",
    }),
    negativeCacheSeconds: Type.Integer({
      minimum: 0,
      maximum: 300,
      default: 10,
      description:
        'How long an `active: false` answer is reused, so a refused token repeated is not asked again.',
    }),
    cacheMaxEntries: Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      default: 10000,
      description:
        'Answers remembered (by SHA-256 digest of the token, never the token), least recently used dropped first.',
    }),
    timeoutMs: Type.Integer({
      minimum: 100,
      maximum: TIMEOUT_MS_CEILING,
      default: 3000,
      description:
        'Longest wait for the introspection endpoint; past it the request gets 503 (never allowed unjudged).',
    }),
  },
  {
    additionalProperties: false,
    description:
      'Opaque access tokens by token introspection (RFC 7662). The customer claim and scopes are read from the answer as from a JWT (auth.jwt.customerClaim, `scope` or `scp`), and its lifetime bounded by auth.jwt.maxLifetimeSeconds.',
  },
);

export type IntrospectionConfig = Static<typeof IntrospectionConfigSchema>;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Cross-field rules the schema cannot say. `jwt`: whether auth.jwt names keys of its own
 * (jwksUrl or jwksFile), and its issuer.
 */
export function checkIntrospectionConfig(
  config: IntrospectionConfig,
  jwt: { external: boolean; issuer: string | undefined },
): string[] {
  const at = '/auth/introspection';
  const problems = checkUrl(config.endpoint, `${at}/endpoint`);
  if (config.jwksUrl !== undefined) problems.push(...checkUrl(config.jwksUrl, `${at}/jwksUrl`));
  if (config.clientAuth === 'client_secret_basic' && config.privateKeyFile !== undefined)
    problems.push(`${at}/privateKeyFile: only with clientAuth private_key_jwt`);
  if (config.clientAuth === 'private_key_jwt' && config.clientSecretFile !== undefined)
    problems.push(`${at}/clientSecretFile: only with clientAuth client_secret_basic`);
  if (config.acceptJwt && !jwt.external)
    problems.push(`${at}/acceptJwt: needs auth.jwt.jwksUrl or jwksFile (the issuer whose JWTs are accepted)`);
  if (config.jwksUrl !== undefined && !config.jwtResponse)
    problems.push(`${at}/jwksUrl: only with jwtResponse (the keys of signed answers)`);
  if (config.jwtResponse && config.jwksUrl === undefined && !(jwt.external && jwt.issuer === config.issuer))
    problems.push(
      `${at}/jwtResponse: needs jwksUrl, or auth.jwt.jwksUrl or jwksFile with auth.jwt.issuer ${JSON.stringify(config.issuer)} (the keys signed answers are verified with)`,
    );
  return problems;
}

/** https, or plain http to a loopback host: keys or answers read in clear could be swapped. */
function checkUrl(text: string, at: string): string[] {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return [`${at}: not a URL`];
  }
  if (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) return [];
  return [`${at}: must be https (http only for loopback hosts)`];
}
