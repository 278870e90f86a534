/**
 * The `routes` config: each route maps a path prefix to its upstream, with its auth and cache
 * settings. Apart from the stage (route.ts) so that the request context can name a route's
 * type without importing the stage that matches it.
 */
import { Type, type Static } from '@sinclair/typebox';
import { checkRouteUpstreams, ROUTE_UPSTREAM_PROPERTIES } from '../upstream/route-upstreams-schema.ts';
import { CorsSchema, checkCors } from '../cors/config-schema.ts';
import { DeprecationSchema, checkDeprecation } from './deprecation-schema.ts';

export const RouteSchema = Type.Object(
  {
    prefix: Type.String({
      pattern: '^(/|(/[A-Za-z0-9._~-]+)+)$',
      description:
        'Path prefix, whole segments, no trailing slash, as `/v1`; `/` alone is a catch-all, taking what no longer prefix matches.',
    }),
    upstream: Type.Optional(
      Type.String({
        format: 'uri',
        description:
          'Origin the route forwards to, as `https://127.0.0.1:8081`; paths are forwarded unchanged. ' +
          'An https: origin gets its TLS settings from `proxy.upstreamTls`; an http: one is plain HTTP, warned about at start. ' +
          'Either this or `upstreams`.',
      }),
    ),
    ...ROUTE_UPSTREAM_PROPERTIES,
    auth: Type.Unsafe<'required' | 'none'>({
      type: 'string',
      enum: ['required', 'none'],
      default: 'required',
      description:
        'Whether the authenticate stage must establish a caller. `none` only when written, and warned about at start.',
    }),
    cache: Type.Boolean({ default: false, description: 'Whether the cache stage may serve this route.' }),
    deprecation: Type.Optional(DeprecationSchema),
    cors: Type.Optional(CorsSchema),
  },
  { additionalProperties: false },
);
export type RouteDefinition = Static<typeof RouteSchema>;

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

export function createRouteSchema(env: NodeJS.ProcessEnv) {
  return Type.Array(RouteSchema, {
    minItems: 1,
    default: defaultRoutes(env),
    description:
      'Path prefix → upstream, longest prefix first. A `routes` list replaces the default routes entirely (`/v1`, `/v1/openapi.json` and `/v1/docs` to the resource service): list them too to keep them.',
  });
}

/** Semantic checks the schema cannot express; each message is `path: problem`. */
export function checkRoutes(routes: readonly RouteDefinition[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  routes.forEach((route, index) => {
    if (seen.has(route.prefix)) problems.push(`routes[${index}].prefix: duplicate prefix ${route.prefix}`);
    seen.add(route.prefix);
    if (route.deprecation !== undefined)
      problems.push(...checkDeprecation(route.deprecation, `routes[${index}].deprecation`));
    if (route.cors !== undefined) problems.push(...checkCors(route.cors, `routes[${index}].cors`));
    problems.push(...checkRouteUpstreams(route, `routes[${index}]`));
  });
  return problems;
}
