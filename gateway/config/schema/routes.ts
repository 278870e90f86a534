/**
 * The `routes` config: each route maps a path prefix to its upstream (one `upstream`, or
 * several weighted `upstreams` with an optional health check), with its auth, cache, CORS and
 * deprecation settings. `RouteDefinition` is the type every room names a route by: the
 * request context, the upstream pools, the dashboard.
 */
import { Type, type Static } from '@sinclair/typebox';
import { CorsDefinitionSchema, checkCorsDefinition } from './cors.ts';
import { DeprecationSchema, checkDeprecation } from './deprecation.ts';
import { WebSocketRouteSchema, checkWebSocketRoute } from './websocket.ts';
import { ROUTE_MATCH_PROPERTIES, checkRouteMatch, hasMatchConditions, matchKey } from './route-match.ts';
import { ROUTE_NAME_PROPERTIES, checkRouteNames } from './route-name.ts';
import { ROUTE_REWRITE_PROPERTIES, checkRouteRewrite, type PathMap } from './route-rewrite.ts';
import { TokenBindingSchema } from './token-binding.ts';

const ON_RELOAD = 'A reload applies it (a new pipeline: ejection and health state start afresh).';

export const UpstreamTargetSchema = Type.Object(
  {
    url: Type.String({
      format: 'uri',
      description: 'Origin of one replica, as `https://10.0.0.5:8081`; an origin only (scheme, host, port).',
    }),
    weight: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 1,
      description: "Share of the route's requests relative to the other targets, when none is busier.",
    }),
  },
  { additionalProperties: false },
);
export type UpstreamTarget = Static<typeof UpstreamTargetSchema>;

export const HealthCheckSchema = Type.Object(
  {
    path: Type.String({
      pattern: '^/[\\x21-\\x7e]*$',
      default: '/healthz',
      description: 'Path fetched with GET on each target; any 2xx answer is a pass.',
    }),
    intervalMs: Type.Integer({
      minimum: 100,
      default: 5000,
      description: 'Time between two checks of a target.',
    }),
    timeoutMs: Type.Integer({
      minimum: 1,
      default: 1000,
      description:
        'Time a check may take (connection and answer); past it the check fails. Below `intervalMs`.',
    }),
    healthyAfter: Type.Integer({
      minimum: 1,
      maximum: 100,
      default: 2,
      description: 'Passes in a row that bring an unhealthy target back.',
    }),
    unhealthyAfter: Type.Integer({
      minimum: 1,
      maximum: 100,
      default: 3,
      description: 'Failures in a row that take a target out.',
    }),
  },
  {
    additionalProperties: false,
    description:
      'Active health check of every target of the route, on a connection of its own: a target that fails ' +
      '`unhealthyAfter` checks in a row gets no requests until it passes `healthyAfter` in a row, and a pass ' +
      'ends an outlier ejection early. A route none of whose targets is healthy answers 503 ' +
      `(ERR_NO_HEALTHY_UPSTREAM) and shows degraded in /readyz, still ready (docs/operations.md). Targets count as healthy until checked. ${ON_RELOAD}`,
  },
);
export type HealthCheck = Static<typeof HealthCheckSchema>;

/** Spread into the route schema's properties. */
const ROUTE_UPSTREAM_PROPERTIES = {
  upstreams: Type.Optional(
    Type.Array(UpstreamTargetSchema, {
      minItems: 1,
      maxItems: 64,
      description:
        'Several targets instead of one `upstream` (one or the other): requests go to the target with the ' +
        'fewest requests awaiting an answer for its weight, ties shared by weight; targets failing in a row ' +
        'are ejected for a while (`proxy.outlierDetection`); an idempotent request without a body that ' +
        `failed to connect is retried on another target within \`proxy.retryBudget\`. ${ON_RELOAD}`,
    }),
  ),
  healthCheck: Type.Optional(HealthCheckSchema),
  healthPath: Type.Optional(
    Type.Union([Type.String({ pattern: '^/[\\x21-\\x7e]*$' }), Type.Literal(false)], {
      expected: 'a path starting with / or false',
      description:
        "Path the dashboard fetches on each target to show its health (any 2xx is healthy); `false`: none, for an upstream without a health endpoint. Unset: the route's `healthCheck.path`, else `/healthz` (the resource service's, which checks PostgreSQL).",
    }),
  ),
};

interface RouteUpstreamKeys {
  upstream?: string;
  upstreams?: readonly UpstreamTarget[];
  healthCheck?: HealthCheck;
  healthPath?: string | false;
}

/** A route's targets, whichever of `upstream` and `upstreams` it names (weight 1 for `upstream`). */
export function routeTargets(route: RouteUpstreamKeys): readonly UpstreamTarget[] {
  if (route.upstreams !== undefined) return route.upstreams;
  return route.upstream === undefined ? [] : [{ url: route.upstream, weight: 1 }];
}

/** The route's target URLs, for logs and start-up lines. */
export function describeTargets(route: RouteUpstreamKeys): string {
  return routeTargets(route)
    .map((target) => target.url)
    .join(', ');
}

/** `routes[i]` problems of these keys and of `upstream`, each `path: problem`. */
function checkRouteUpstreams(route: RouteUpstreamKeys, at: string): string[] {
  if ((route.upstream === undefined) === (route.upstreams === undefined))
    return [`${at}: needs exactly one of upstream and upstreams`];
  const problems =
    route.upstreams === undefined
      ? checkOrigin(route.upstream, `${at}.upstream`)
      : route.upstreams.flatMap((target, index) => checkOrigin(target.url, `${at}.upstreams[${index}].url`));
  const seen = new Set<string>();
  route.upstreams?.forEach((target, index) => {
    const origin = URL.canParse(target.url) ? new URL(target.url).origin : target.url;
    if (seen.has(origin)) problems.push(`${at}.upstreams[${index}].url: ${origin} is listed already`);
    seen.add(origin);
  });
  const check = route.healthCheck;
  if (check !== undefined && check.timeoutMs >= check.intervalMs)
    problems.push(`${at}.healthCheck.timeoutMs: must be below intervalMs (${check.intervalMs})`);
  return problems;
}

function checkOrigin(value: string | undefined, at: string): string[] {
  let url: URL;
  try {
    url = new URL(value ?? '');
  } catch {
    return [`${at}: must be a URL`];
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return [`${at}: must be an http: or https: URL`];
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '')
    return [`${at}: must be an origin only (scheme, host, port)`];
  return [];
}

export const RouteDefinitionSchema = Type.Object(
  {
    prefix: Type.String({
      pattern: '^(/|(/[A-Za-z0-9._~-]+)+)$',
      description:
        'Path prefix, whole segments, no trailing slash, as `/v1`; `/` alone is a catch-all, taking what no longer prefix matches.',
    }),
    ...ROUTE_NAME_PROPERTIES,
    ...ROUTE_MATCH_PROPERTIES,
    inherit: Type.Optional(
      Type.Boolean({
        description:
          'Default `true`: whether the route takes the keys it does not set (upstream, auth, tokenBinding, cache, cors, deprecation, rateLimits, stripPrefix/rewrite) ' +
          'from its parent, the route of the longest prefix enclosing its own that has no `methods`, `hosts` or `headers`. ' +
          '`false`: the defaults instead (docs/configuration.md, "Routes").',
      }),
    ),
    upstream: Type.Optional(
      Type.String({
        format: 'uri',
        description:
          'Origin the route forwards to, as `https://127.0.0.1:8081`; paths are forwarded unchanged unless `stripPrefix` or `rewrite` says. ' +
          'An https: origin gets its TLS settings from `proxy.upstreamTls`; an http: one is plain HTTP, warned about at start. ' +
          "Either this or `upstreams`, or neither to take the parent's.",
      }),
    ),
    ...ROUTE_UPSTREAM_PROPERTIES,
    ...ROUTE_REWRITE_PROPERTIES,
    auth: Type.Optional(
      Type.Unsafe<'required' | 'none'>({
        type: 'string',
        enum: ['required', 'none'],
        description:
          "Whether the authenticate stage must establish a caller: the parent's, else `required`. `none` only when written, and warned about at start.",
      }),
    ),
    tokenBinding: Type.Optional(TokenBindingSchema),
    cache: Type.Optional(
      Type.Boolean({
        description:
          "Whether the cache stage may serve this route (GET and HEAD, and a POST's answer that names its own URL; docs/caching.md): the parent's, else `false`.",
      }),
    ),
    deprecation: Type.Optional(DeprecationSchema),
    cors: Type.Optional(CorsDefinitionSchema),
    websocket: Type.Optional(WebSocketRouteSchema),
    rateLimits: Type.Optional(
      Type.Array(Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }), {
        uniqueItems: true,
        description:
          "Names of `rateLimits.policies` of `scope: route` that count this route's requests, besides the policies of `scope: all`; the parent's when unset, `[]` for none.",
      }),
    ),
  },
  { additionalProperties: false },
);
/** A route as the file writes it: what it does not set comes from its parent (route-inheritance.ts). */
export type RouteDefinitionInput = Static<typeof RouteDefinitionSchema>;

/**
 * A route as every room sees it, its parent's keys taken (route-inheritance.ts): `auth` and
 * `cache` always set, and `pathMap`, the prefix its target's path is rewritten from and to.
 */
export type RouteDefinition = Omit<RouteDefinitionInput, 'auth' | 'cache'> & {
  auth: 'required' | 'none';
  cache: boolean;
  /** Set from `stripPrefix` or `rewrite`, the route's own or its parent's (with the parent's prefix). */
  pathMap?: PathMap;
};

/**
 * The resource service on this host: HTTPS (mutual TLS, `proxy.upstreamTls`) unless
 * SERVICE_PLAIN_HTTP=true, the service's own explicit opt-out, says it speaks plain HTTP.
 */
export function defaultServiceOrigin(env: NodeJS.ProcessEnv): string {
  const scheme = env['SERVICE_PLAIN_HTTP'] === 'true' ? 'http' : 'https';
  return `${scheme}://127.0.0.1:${env['SERVICE_PORT'] || '8081'}`;
}

/**
 * The default routes: `/v1` to the resource service on this host, and its OpenAPI document
 * and the API reference rendered from it, public so that clients can read the API before they
 * hold a credential.
 */
export function defaultRoutes(env: NodeJS.ProcessEnv): RouteDefinition[] {
  const upstream = defaultServiceOrigin(env);
  return [
    { prefix: '/v1', upstream, auth: 'required', cache: true },
    { prefix: '/v1/openapi.json', upstream, auth: 'none', cache: true },
    { prefix: '/v1/docs', upstream, auth: 'none', cache: true },
  ];
}

export function createRouteDefinitionsSchema(env: NodeJS.ProcessEnv) {
  return Type.Array(RouteDefinitionSchema, {
    minItems: 1,
    default: defaultRoutes(env),
    description:
      'Path prefix → upstream, longest prefix first. A `routes` list replaces the default routes entirely (`/v1`, `/v1/openapi.json` and `/v1/docs` to the resource service): list them too to keep them.',
  });
}

/**
 * Semantic checks the schema cannot express, on the routes as written; each message is
 * `path: problem`. A route's targets are checked where it names them, and its need of one
 * after inheritance (route-inheritance.ts).
 */
export function checkRouteDefinitions(
  routes: readonly RouteDefinitionInput[],
  resolved: readonly RouteDefinition[],
): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  routes.forEach((route, index) => {
    const at = `routes[${index}]`;
    const key = matchKey(route.prefix, route);
    if (seen.has(key))
      problems.push(
        hasMatchConditions(route)
          ? `${at}: duplicate route: another of prefix ${route.prefix} has the same methods, hosts and headers`
          : `${at}.prefix: duplicate prefix ${route.prefix}`,
      );
    seen.add(key);
    if (route.deprecation !== undefined)
      problems.push(...checkDeprecation(route.deprecation, `${at}.deprecation`));
    if (route.cors !== undefined) problems.push(...checkCorsDefinition(route.cors, `${at}.cors`));
    if (route.websocket !== undefined)
      problems.push(...checkWebSocketRoute(route.websocket, `${at}.websocket`));
    problems.push(...checkRouteMatch(route, at), ...checkRouteRewrite(route, at));
    const ownsTargets = route.upstream !== undefined || route.upstreams !== undefined;
    if (ownsTargets) problems.push(...checkRouteUpstreams(route, at));
    else if (routeTargets(resolved[index] as RouteDefinition).length === 0)
      problems.push(`${at}: needs exactly one of upstream and upstreams, or a parent route that has one`);
  });
  return [...problems, ...checkRouteNames(routes)];
}
