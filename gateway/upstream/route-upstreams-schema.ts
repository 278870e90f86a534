/**
 * The route keys that say where a route forwards beyond one `upstream`: several weighted
 * targets (`upstreams`) and an optional active health check of them (`healthCheck`). Kept
 * apart from route-schema.ts, which spreads these keys in, so that the upstream side owns its
 * own schema and checks.
 */
import { Type, type Static } from '@sinclair/typebox';

const NOT_RELOADED = 'Needs a restart: routes do not reload.';

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
      `(ERR_NO_HEALTHY_UPSTREAM) and shows degraded in /readyz, still ready (docs/operations.md). Targets count as healthy until checked. ${NOT_RELOADED}`,
  },
);
export type HealthCheck = Static<typeof HealthCheckSchema>;

/** Spread into the route schema's properties. */
export const ROUTE_UPSTREAM_PROPERTIES = {
  upstreams: Type.Optional(
    Type.Array(UpstreamTargetSchema, {
      minItems: 1,
      maxItems: 64,
      description:
        'Several targets instead of one `upstream` (one or the other): requests go to the target with the ' +
        'fewest requests awaiting an answer for its weight, ties shared by weight; targets failing in a row ' +
        'are ejected for a while (`proxy.outlierDetection`); an idempotent request without a body that ' +
        `failed to connect is retried on another target within \`proxy.retryBudget\`. ${NOT_RELOADED}`,
    }),
  ),
  healthCheck: Type.Optional(HealthCheckSchema),
};

interface RouteUpstreamKeys {
  upstream?: string;
  upstreams?: readonly UpstreamTarget[];
  healthCheck?: HealthCheck;
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
export function checkRouteUpstreams(route: RouteUpstreamKeys, at: string): string[] {
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
