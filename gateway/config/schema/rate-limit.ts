/**
 * The `rateLimits` section of the gateway config. Every field has a type, a default and a
 * description; docs/configuration.md is written from this.
 */
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { canonicalPath, isCanonicalPath } from '../../../shared/canonical-path.ts';

/** `30s`, `1m`, `2h`, `1d`, or a whole number of seconds. */
export const DURATION_PATTERN = '^[1-9][0-9]*(s|m|h|d)?$';
const Duration = (description: string, defaultValue: string) =>
  Type.Union([Type.String({ pattern: DURATION_PATTERN }), Type.Integer({ minimum: 1 })], {
    description,
    default: defaultValue,
    // What a refusal says the key takes (config/load.ts), in one line.
    expected: 'a duration (30s, 1m, 2h, 1d) or a whole number of seconds',
  });

const HTTP_METHOD = Type.Unsafe<string>({
  type: 'string',
  enum: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
});

export const RateLimitPolicyConfigSchema = Type.Object(
  {
    name: Type.String({
      pattern: '^[A-Za-z0-9_-]{1,64}$',
      description: 'Names the policy in RateLimit headers, logs and metrics. Unique.',
    }),
    key: Type.Unsafe<'principal' | 'customer' | 'apiKey' | 'ip'>({
      type: 'string',
      enum: ['principal', 'customer', 'apiKey', 'ip'],
      default: 'principal',
      description:
        'What is counted: the authenticated principal (for requests without one, on `auth: none` routes, the client address), its customer (all its tokens and keys together), the API key (only requests made with one), or the client address.',
    }),
    scope: Type.Optional(
      Type.Unsafe<'all' | 'route'>({
        type: 'string',
        enum: ['all', 'route'],
        description:
          '`all` (the default): every request `match` takes. `route`: only the requests of routes that name the policy in their `rateLimits` (and `match` still narrows); a per-route limit by reference.',
      }),
    ),
    limit: Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: 'Requests allowed per window.' }),
    window: Duration('Length of the fixed window.', '60s'),
    match: Type.Optional(
      Type.Object(
        {
          methods: Type.Optional(
            Type.Array(HTTP_METHOD, { minItems: 1, uniqueItems: true, description: 'Only these methods.' }),
          ),
          path: Type.Optional(
            Type.String({
              pattern: '^/',
              description:
                'Only this path and the paths below it (segment-wise prefix), spelled as requests must be: case as the service has it, percent-encoding only where a character must be encoded (`/v1/customers/cus:1`, not `cus%3A1`).',
            }),
          ),
        },
        { additionalProperties: false, description: 'Which requests the policy counts; all when absent.' },
      ),
    ),
  },
  { additionalProperties: false },
);
export type RateLimitPolicyConfig = Static<typeof RateLimitPolicyConfigSchema>;

export const RateLimitsConfigSchema = Type.Object(
  {
    onStoreFailure: Type.Unsafe<'memory' | 'allow' | 'deny'>({
      type: 'string',
      enum: ['memory', 'allow', 'deny'],
      default: 'memory',
      description:
        'When Redis is down or slow: `memory` counts in each gateway against its share of the limit (limit ÷ live gateways, see docs/scaling.md), `allow` lets requests through uncounted, `deny` answers 503. Authentication never fails open.',
    }),
    storeTimeoutMs: Type.Integer({
      minimum: 5,
      maximum: 5000,
      default: 250,
      description:
        'Longest a Redis command may take before the store counts as failed for that request. The default outlasts a cross-host round trip (60 ms tested) and a Cluster redirection or retry (docs/scaling.md).',
    }),
    expectedGateways: Type.Integer({
      minimum: 1,
      maximum: 10_000,
      default: 1,
      description:
        "Gateway processes (replicas × workers) the limits are shared by, at least: the divisor of a gateway's share of a limit while Redis fails, until heartbeats in Redis count more. Set it so that a gateway starting during an outage keeps the bound of docs/scaling.md.",
    }),
    policies: Type.Array(RateLimitPolicyConfigSchema, {
      default: [{ name: 'default', key: 'principal', limit: 600, window: '60s' }],
      description:
        'Every policy that matches a request counts it; the request is refused if any is exceeded.',
    }),
    authFailures: Type.Object(
      {
        limit: Type.Integer({
          minimum: 1,
          default: 20,
          description: 'Failed authentications allowed per window.',
        }),
        window: Duration('Window of the failed-authentication counter.', '60s'),
        newCredentials: Type.Integer({
          minimum: 0,
          default: 600,
          description:
            'Once `limit` is exceeded, credentials not seen failing from that address are still verified, up to this many per window (a valid one is let in, and counts nothing); 0 refuses every credential not known good until the window ends.',
        }),
      },
      {
        additionalProperties: false,
        default: { limit: 20, window: '60s', newCredentials: 600 },
        description:
          'Built-in policy: failed authentications per client address. Once exceeded, a credential that failed before is refused without being verified, and new ones are verified only within `newCredentials` (docs/security.md says why).',
      },
    ),
    anonymous: Type.Object(
      {
        limit: Type.Integer({
          minimum: 1,
          default: 120,
          description: 'Refusals allowed per window and client address.',
        }),
        window: Duration('Window of the counter.', '60s'),
      },
      {
        additionalProperties: false,
        default: { limit: 120, window: '60s' },
        description:
          'Built-in policy: requests that name no route (404) or carry no credential for a route that requires one (401), per client address. Past the limit they are answered 429 with Retry-After; requests with a valid credential are not counted and never refused by it.',
      },
    ),
    ipv6PrefixLength: Type.Integer({
      minimum: 32,
      maximum: 128,
      default: 64,
      description:
        'IPv6 clients are counted by this prefix wherever a limit counts addresses (`key: ip`, requests without a principal, failed authentications, the anonymous limit): one subscriber or host usually holds a whole /64.',
    }),
  },
  { additionalProperties: false },
);
export type RateLimitsConfig = Static<typeof RateLimitsConfigSchema>;

export const DEFAULT_RATE_LIMITS: RateLimitsConfig = {
  onStoreFailure: 'memory',
  storeTimeoutMs: 250,
  expectedGateways: 1,
  policies: [{ name: 'default', key: 'principal', limit: 600, window: '60s' }],
  authFailures: { limit: 20, window: '60s', newCredentials: 600 },
  anonymous: { limit: 120, window: '60s' },
  ipv6PrefixLength: 64,
};

/**
 * What the schema cannot say: policy names are unique (they name the headers and the audit),
 * and a policy's path is spelled canonically, the only spelling a request can reach it by
 * (shared/canonical-path.ts); a trailing slash is allowed and ignored.
 */
export function checkRateLimitsConfig(config: RateLimitsConfig): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  config.policies.forEach((policy, index) => {
    if (seen.has(policy.name))
      problems.push(`rateLimits.policies[${index}].name: duplicate policy name "${policy.name}"`);
    seen.add(policy.name);
    const path = policy.match?.path;
    if (path !== undefined && path !== '/' && !isCanonicalPath(path.replace(/\/$/, ''))) {
      const canonical = canonicalPath(path);
      problems.push(
        `rateLimits.policies[${index}].match.path: requests never arrive spelled "${path}"` +
          (canonical === undefined ? '' : `; write "${canonical}"`),
      );
    }
  });
  return problems;
}

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

export function durationSeconds(value: string | number): number {
  if (typeof value === 'number') return value;
  const match = /^([1-9][0-9]*)([smhd])?$/.exec(value);
  if (match === null) throw new Error(`not a duration: ${value}`);
  return Number(match[1]) * UNIT_SECONDS[(match[2] ?? 's') as keyof typeof UNIT_SECONDS];
}
