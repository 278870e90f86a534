/**
 * The per-route `cors` key (the Fetch standard's CORS protocol): which browser origins may
 * call the route, with which methods and headers, and what they may read of the answers.
 * Every list has a default that fits this API; only `origins` must be written.
 */
import { Type, type Static } from '@sinclair/typebox';

const TOKEN_OR_STAR = "^([!#$%&'*+.^_`|~0-9A-Za-z-]+)$";

const HTTP_METHOD = Type.Unsafe<string>({
  type: 'string',
  enum: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
});

export const DEFAULT_CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
// DPoP and WWW-Authenticate, DPoP-Nonce: a browser client of sender-constrained tokens sends
// its proof, and must read the challenge and the server nonce to retry (RFC 9449 §8).
export const DEFAULT_CORS_HEADERS = [
  'Authorization',
  'Content-Type',
  'DPoP',
  'Idempotency-Key',
  'If-Match',
  'If-None-Match',
];
export const DEFAULT_CORS_EXPOSE = [
  'DPoP-Nonce',
  'ETag',
  'Location',
  'Link',
  'Retry-After',
  'RateLimit',
  'RateLimit-Policy',
  'WWW-Authenticate',
  'X-Request-Id',
];

export const CorsDefinitionSchema = Type.Object(
  {
    origins: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      uniqueItems: true,
      description:
        'Origins allowed to call the route from a browser, each `scheme://host[:port]` as browsers send it (`https://app.example.com`), or `["*"]` for any origin (not with credentials). `null` is never allowed.',
    }),
    methods: Type.Array(HTTP_METHOD, {
      minItems: 1,
      uniqueItems: true,
      default: DEFAULT_CORS_METHODS,
      description: 'Methods a preflight allows (`Access-Control-Allow-Methods`).',
    }),
    headers: Type.Array(Type.String({ pattern: TOKEN_OR_STAR }), {
      uniqueItems: true,
      default: DEFAULT_CORS_HEADERS,
      description:
        'Request headers a preflight allows (`Access-Control-Allow-Headers`); `*` for any, not with credentials.',
    }),
    exposeHeaders: Type.Array(Type.String({ pattern: TOKEN_OR_STAR }), {
      uniqueItems: true,
      default: DEFAULT_CORS_EXPOSE,
      description:
        'Response headers scripts may read besides the safelisted ones (`Access-Control-Expose-Headers`).',
    }),
    credentials: Type.Boolean({
      default: false,
      description:
        'Whether browsers may send cookies or HTTP authentication and read the answer (`Access-Control-Allow-Credentials`). Not with `*` anywhere.',
    }),
    maxAgeSeconds: Type.Integer({
      minimum: 0,
      maximum: 86400,
      default: 600,
      description: 'How long a browser may reuse a preflight answer (`Access-Control-Max-Age`).',
    }),
  },
  {
    additionalProperties: false,
    description:
      'CORS for browser callers: preflights from allowed origins answered at the edge (204, before authentication, counted by address), `Access-Control-Allow-Origin` and `Vary: Origin` on every answer, refusals included.',
  },
);
export type CorsDefinition = Static<typeof CorsDefinitionSchema>;

/** What the schema cannot say; each message is `path: problem`. */
export function checkCorsDefinition(cors: CorsDefinition, path: string): string[] {
  const problems: string[] = [];
  const anyOrigin = cors.origins.includes('*');
  if (anyOrigin && cors.origins.length > 1)
    problems.push(`${path}.origins: "*" allows every origin and cannot be listed with others`);
  cors.origins.forEach((origin, index) => {
    if (origin === '*') return;
    const problem = originProblem(origin);
    if (problem !== undefined) problems.push(`${path}.origins[${index}]: ${problem}`);
  });
  if (cors.credentials) {
    // The Fetch standard reads `*` literally on credentialed requests: never a wildcard there.
    for (const key of ['origins', 'headers', 'exposeHeaders'] as const)
      if (cors[key].includes('*'))
        problems.push(`${path}.${key}: "*" cannot be used with credentials: true; list the values`);
  }
  return problems;
}

/** Why a configured origin is not one a browser sends, or undefined when it is. */
function originProblem(origin: string): string | undefined {
  if (origin === 'null')
    return '"null" is the origin of sandboxed and file: pages, which any site can make; never allowed';
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/?#@\s]+$/.test(origin))
    return `"${origin}" must be an origin, scheme://host[:port], lower case, without path or trailing slash`;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return `"${origin}" is not a valid origin`;
  }
  if ((url.protocol === 'http:' || url.protocol === 'https:') && url.origin !== origin)
    return `"${origin}" is not spelled as browsers send it; write "${url.origin}"`;
  return undefined;
}

/** What a route's cors and tokenBinding need of each other; the two keys a route resolves. */
interface BoundCorsRoute {
  prefix: string;
  cors?: CorsDefinition | undefined;
  tokenBinding?: { require?: 'dpop' | 'certificate'; dpopNonce?: boolean } | undefined;
}

/**
 * Routes open to browsers (`cors`) that take DPoP proofs, but whose own lists keep a page from
 * sending one (`DPoP`) or from reading the nonce to retry with (`DPoP-Nonce`): legal, since a
 * route's clients may all be servers, but a browser client there fails with a CORS error.
 */
export function corsDpopWarnings(routes: readonly BoundCorsRoute[]): string[] {
  const listed = (list: readonly string[], name: string) =>
    list.some((entry) => entry === '*' || entry.toLowerCase() === name.toLowerCase());
  const warnings: string[] = [];
  for (const { prefix, cors, tokenBinding } of routes) {
    if (cors === undefined || tokenBinding === undefined) continue;
    const dpop = tokenBinding.require === 'dpop' || tokenBinding.dpopNonce === true;
    if (dpop && !listed(cors.headers, 'DPoP'))
      warnings.push(
        `route ${prefix} takes DPoP proofs, but its cors.headers does not list DPoP: browsers cannot send one`,
      );
    if (tokenBinding.dpopNonce === true && !listed(cors.exposeHeaders, 'DPoP-Nonce'))
      warnings.push(
        `route ${prefix} requires DPoP nonces, but its cors.exposeHeaders does not list DPoP-Nonce: browsers cannot read one`,
      );
  }
  return warnings;
}
