/**
 * The `auth` section of the gateway config: who issues the access tokens we accept and how
 * strictly we check them, and whether signed API keys are accepted.
 */
import { Type, type Static } from '@sinclair/typebox';
import { checkIntrospectionConfig, IntrospectionConfigSchema } from './introspection.ts';

/**
 * Asymmetric algorithms only: a shared-secret algorithm (HS*) next to public keys is how the
 * "HS256 signed with the public key" attack works, and `none` is no signature at all.
 */
export const JWT_ALGORITHMS = [
  'ES256',
  'ES384',
  'ES512',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'EdDSA',
] as const;

export const JwtConfigSchema = Type.Object(
  {
    issuer: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Expected `iss` of access tokens. Required with jwksUrl or jwksFile; without either, the development issuer of the data dir is trusted and this must be left out (refused with NODE_ENV=production when a route takes tokens: each replica would be an issuer of its own).',
      }),
    ),
    audience: Type.Optional(
      Type.Union(
        [Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })],
        {
          description:
            'Accepted `aud` value(s): a token must name at least one. Required with jwksUrl or jwksFile.',
        },
      ),
    ),
    jwksUrl: Type.Optional(
      Type.String({
        format: 'uri',
        description:
          "The identity provider's JWKS endpoint. Must be https (plain http only for loopback hosts): keys fetched in clear could be swapped.",
      }),
    ),
    jwksFile: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'A JWKS file read once at start, instead of jwksUrl (air-gapped or fixed keys).',
      }),
    ),
    algorithms: Type.Array(Type.Union(JWT_ALGORITHMS.map((alg) => Type.Literal(alg))), {
      minItems: 1,
      uniqueItems: true,
      default: ['ES256', 'RS256', 'EdDSA', 'PS256'],
      description: 'Signature algorithms accepted (allow-list). HS* and none are never accepted.',
    }),
    clockSkewSeconds: Type.Integer({
      minimum: 0,
      maximum: 300,
      default: 30,
      description: 'Tolerated clock difference with the issuer when checking exp, nbf and iat, in seconds.',
    }),
    maxLifetimeSeconds: Type.Integer({
      minimum: 60,
      maximum: 31_536_000,
      default: 86_400,
      description:
        'Longest accepted token lifetime (`exp` - `iat`), in seconds; a longer-lived token is refused (401 invalid_token): a stolen one must not work for years. A day by default, what `npm run -s token` mints at most.',
    }),
    maxTokenBytes: Type.Integer({
      minimum: 256,
      maximum: 65536,
      default: 8192,
      description: 'Longer tokens are refused before any parsing.',
    }),
    customerClaim: Type.String({
      minLength: 1,
      default: 'customer_id',
      description:
        'Token claim holding the customer id, by name (`customer_id`, or a URL such as `https://example.com/customer`) or by dotted path into a nested object (`ext.customer_id`); the whole name is tried first. A token without it is refused. Scopes are read from `scope` (space-separated) or else `scp` (an array).',
    }),
    staleKeysMaxAgeSeconds: Type.Integer({
      minimum: 0,
      maximum: 7 * 24 * 3600,
      default: 3600,
      description:
        'How long the last good keys stay in use while the JWKS endpoint cannot be reached, counted from when they were due for refresh. Past it, tokens get 503.',
    }),
    refetchCooldownSeconds: Type.Integer({
      minimum: 1,
      maximum: 3600,
      default: 30,
      description:
        'Least time between two JWKS fetches triggered by a token with an unknown key id, so forged kids cannot hammer the identity provider.',
    }),
    cacheMaxEntries: Type.Integer({
      minimum: 0,
      maximum: 1_000_000,
      default: 10000,
      description: 'Verified tokens remembered (by hash, never beyond their exp); 0 disables the cache.',
    }),
  },
  { additionalProperties: false, default: {}, description: 'OAuth 2.0 access tokens (RFC 9068 JWTs).' },
);

export const ApiKeysConfigSchema = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description: 'Accept signed API keys (`Authorization: ApiKey <key>`).',
    }),
  },
  { additionalProperties: false, default: {}, description: 'Signed API keys.' },
);

/** DPoP proofs are signed by the client's own key: asymmetric algorithms only, as for tokens. */
export const DpopConfigSchema = Type.Object(
  {
    algorithms: Type.Array(Type.Union(JWT_ALGORITHMS.map((alg) => Type.Literal(alg))), {
      minItems: 1,
      uniqueItems: true,
      default: ['ES256', 'EdDSA', 'PS256', 'RS256'],
      description:
        'Signature algorithms accepted for DPoP proofs (RFC 9449), announced in `WWW-Authenticate: DPoP algs=...`. HS* and none are never accepted.',
    }),
    proofMaxAgeSeconds: Type.Integer({
      minimum: 5,
      maximum: 600,
      default: 60,
      description:
        "How old a proof's `iat` may be, in seconds. Each proof's `jti` is remembered (in Redis, for every replica) this long plus the skew, so the window also bounds that memory.",
    }),
    clockSkewSeconds: Type.Integer({
      minimum: 0,
      maximum: 60,
      default: 5,
      description:
        "How far in the future a proof's `iat` may be (the client's clock ahead of ours), in seconds.",
    }),
    nonceLifetimeSeconds: Type.Integer({
      minimum: 10,
      maximum: 3600,
      default: 300,
      description:
        'How long a server nonce (`DPoP-Nonce`) stays good, on routes with `tokenBinding.dpopNonce`; a new one is offered halfway through.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'Sender-constrained tokens by DPoP (RFC 9449): `Authorization: DPoP <token>` with a `DPoP` proof of the key the token is bound to.',
  },
);

export const AuthConfigSchema = Type.Object(
  {
    jwt: JwtConfigSchema,
    apiKeys: ApiKeysConfigSchema,
    introspection: Type.Optional(IntrospectionConfigSchema),
    dpop: DpopConfigSchema,
  },
  { additionalProperties: false, default: {}, description: 'Authentication of every request at the edge.' },
);

export type JwtConfig = Static<typeof JwtConfigSchema>;
export type DpopConfig = Static<typeof DpopConfigSchema>;
export type AuthConfig = Static<typeof AuthConfigSchema>;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Cross-field rules the schema cannot say; returns `path: reason` lines, empty when fine. */
export function checkAuthConfig(config: AuthConfig): string[] {
  const problems: string[] = [];
  const { jwt } = config;
  if (jwt.jwksUrl !== undefined && jwt.jwksFile !== undefined) {
    problems.push('/auth/jwt: set jwksUrl or jwksFile, not both');
  }
  const external = jwt.jwksUrl !== undefined || jwt.jwksFile !== undefined;
  if (external && jwt.issuer === undefined)
    problems.push('/auth/jwt/issuer: required with jwksUrl or jwksFile');
  if (external && jwt.audience === undefined)
    problems.push('/auth/jwt/audience: required with jwksUrl or jwksFile');
  if (!external && (jwt.issuer !== undefined || jwt.audience !== undefined)) {
    problems.push(
      '/auth/jwt: issuer and audience need jwksUrl or jwksFile (the development issuer has its own)',
    );
  }
  if (jwt.jwksUrl !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(jwt.jwksUrl);
    } catch {
      problems.push('/auth/jwt/jwksUrl: not a URL');
    }
    if (
      url !== undefined &&
      url.protocol !== 'https:' &&
      !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))
    ) {
      problems.push('/auth/jwt/jwksUrl: must be https (http only for loopback hosts)');
    }
  }
  if (config.introspection !== undefined)
    problems.push(...checkIntrospectionConfig(config.introspection, { external, issuer: jwt.issuer }));
  return problems;
}
