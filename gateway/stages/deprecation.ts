/**
 * Deprecated routes say so on every answer: `Deprecation: @<unix seconds>` (RFC 9745),
 * `Sunset` (RFC 8594) and `Link` with rel="deprecation" / rel="sunset", refusals of later
 * stages included; and every such call is counted, with who made it, once the answer is known.
 *
 * The fields are made once per route from the config; a route without `deprecation` costs a
 * map lookup. Left out of the pipeline when no route is deprecated.
 */
import type { DeprecatedCallCounter } from '../observability/deprecation-metrics.ts';
import type { Stage } from '../pipeline/context.ts';
import { parseTimestamp, type Deprecation } from '../config/schema/deprecation.ts';
import type { RouteDefinition } from '../config/schema/routes.ts';
import { routeLabel } from '../config/schema/route-name.ts';

interface DeprecationFields {
  deprecation: string;
  sunset?: string;
  links: string[];
}

/** The response fields for one route's `deprecation` (validated by checkDeprecation). */
export function deprecationFields(deprecation: Deprecation): DeprecationFields {
  const at = parseTimestamp(deprecation.at) ?? 0;
  const sunset = deprecation.sunset === undefined ? undefined : parseTimestamp(deprecation.sunset);
  const links: string[] = [];
  if (deprecation.link !== undefined) {
    links.push(`<${deprecation.link}>; rel="deprecation"`);
    if (sunset !== undefined) links.push(`<${deprecation.link}>; rel="sunset"`);
  }
  return {
    deprecation: `@${Math.floor(at / 1000)}`,
    ...(sunset === undefined ? {} : { sunset: new Date(sunset).toUTCString() }),
    links,
  };
}

/** Undefined when no route is deprecated: the stage is then left out. */
export function createDeprecationStage(
  routes: readonly RouteDefinition[],
  countCall: DeprecatedCallCounter,
): Stage | undefined {
  const byRoute = new Map<RouteDefinition, DeprecationFields>();
  for (const route of routes)
    if (route.deprecation !== undefined) byRoute.set(route, deprecationFields(route.deprecation));
  if (byRoute.size === 0) return undefined;

  // Other routes pass straight through: no promise of the stage's own on their requests.
  return function deprecation(ctx, next) {
    const { route } = ctx.upstream;
    const fields = route === undefined ? undefined : byRoute.get(route);
    if (fields === undefined) return next();
    return next().then(() => {
      const response = ctx.response;
      if (response === undefined) return;
      const { headers } = response;
      headers['deprecation'] = fields.deprecation;
      if (fields.sunset !== undefined) headers['sunset'] = fields.sunset;
      // The upstream's own links (rel="next" on lists) stay; ours are added.
      if (fields.links.length > 0) headers['link'] = [...asList(headers['link']), ...fields.links];
      countCall(routeLabel(route!), ctx.upstream.principal);
    });
  };
}

function asList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return typeof value === 'string' ? [value] : value;
}
