/**
 * What a route matches beyond its path prefix: `methods`, `hosts` (exact names and `*.` wildcards)
 * and `headers` (exact values). A route that sets none matches every request under its prefix.
 * The precedence among routes that match one request is the route stage's (stages/route.ts).
 */
import { Type, type Static } from '@sinclair/typebox';

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// A DNS name, lower case, or `*.` and one: `api.example.com`, `*.example.com`, `localhost`.
const HOST = '^(\\*\\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$';

/** Spread into the route schema's properties. */
export const ROUTE_MATCH_PROPERTIES = {
  methods: Type.Optional(
    Type.Array(Type.String({ pattern: '^[A-Z]+$' }), {
      minItems: 1,
      uniqueItems: true,
      description:
        'Methods the route takes, upper case, as `[GET, HEAD]`; a request under the prefix with another method goes ' +
        'to the next route that matches, or is answered 405 with `Allow` when no route does.',
    }),
  ),
  hosts: Type.Optional(
    Type.Array(Type.String({ pattern: HOST, maxLength: 253 }), {
      minItems: 1,
      uniqueItems: true,
      description:
        "Host names the route takes (the request's Host or :authority, port left out), lower case: exact, as " +
        '`api.example.com`, or `*.example.com` for any name below it (not `example.com` itself).',
    }),
  ),
  headers: Type.Optional(
    Type.Record(Type.String(), Type.String({ maxLength: 1024 }), {
      minProperties: 1,
      description:
        'Request header fields the route requires, name to exact value, as `{x-tenant: acme}`; names are case-insensitive, ' +
        'values compared as sent (several lines of one field joined by `, `).',
    }),
  ),
};

export const RouteMatchSchema = Type.Object(ROUTE_MATCH_PROPERTIES);
export type RouteMatch = Static<typeof RouteMatchSchema>;

/** Whether the route matches on more than its prefix. */
export function hasMatchConditions(route: RouteMatch): boolean {
  return route.methods !== undefined || route.hosts !== undefined || route.headers !== undefined;
}

/** What tells two routes of one prefix apart: equal keys are a duplicate route. */
export function matchKey(prefix: string, route: RouteMatch): string {
  const headers = Object.entries(route.headers ?? {})
    .map(([name, value]) => [name.toLowerCase(), value])
    .sort();
  return JSON.stringify([
    prefix,
    [...(route.methods ?? [])].sort(),
    [...(route.hosts ?? [])].sort(),
    headers,
  ]);
}

/** Checks the schema cannot say, for `routes[index]`; each is `path: problem`. */
export function checkRouteMatch(route: RouteMatch, at: string): string[] {
  const written = Object.keys(route.headers ?? {});
  const names = written.map((name) => name.toLowerCase());
  return [
    ...written
      .filter((name) => !TOKEN.test(name))
      .map((name) => `${at}.headers: ${JSON.stringify(name)} is not a header field name`),
    ...names
      .filter((name, index) => names.indexOf(name) !== index)
      .map((name) => `${at}.headers: ${name} is listed twice (names are case-insensitive)`),
  ];
}
