/**
 * A route's `name`: its label wherever the gateway tells of a request (the `route` label of
 * /metrics, the request log line, the audit record, the span name, the dashboard). Without
 * one a route is labelled by its prefix, as before the key existed; two routes of one prefix
 * (a POST-only route beside its parent) then share a label, and a name tells them apart.
 */
import { Type } from '@sinclair/typebox';

/** Spread into the route schema's properties. */
export const ROUTE_NAME_PROPERTIES = {
  name: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9._~/:-]{1,100}$',
      description:
        "The route's label in metrics, logs, audit records and the dashboard, as `orders-write`: unique among the routes' labels. " +
        'Unset: its prefix. Never inherited. Letters, digits and `. _ ~ / : -`.',
    }),
  ),
};

/** The route's label: its `name`, else its prefix. */
export function routeLabel(route: { prefix: string; name?: string | undefined }): string {
  return route.name ?? route.prefix;
}

/**
 * `routes[i].name` problems: a written name that another route's label (written or its prefix)
 * already is would merge two routes' figures. Unnamed routes of one prefix keep sharing it.
 */
export function checkRouteNames(routes: readonly { prefix: string; name?: string | undefined }[]): string[] {
  const problems: string[] = [];
  routes.forEach((route, index) => {
    if (route.name === undefined) return;
    const other = routes.findIndex((candidate, at) => at !== index && routeLabel(candidate) === route.name);
    if (other !== -1 && (other < index || routes[other]?.name === undefined))
      problems.push(
        `routes[${index}].name: duplicate name ${route.name} (routes[${other}] has it): route names label metrics, logs and audit records`,
      );
  });
  return problems;
}

/** A start warning per unnamed route whose label an earlier route has already: their figures merge. */
export function sharedLabelWarnings(
  routes: readonly { prefix: string; name?: string | undefined }[],
): string[] {
  return routes.flatMap((route, index) => {
    if (route.name !== undefined) return [];
    const first = routes.findIndex((candidate) => routeLabel(candidate) === route.prefix);
    return first < index
      ? [
          `routes[${index}] shares the label ${route.prefix} with routes[${first}] in metrics, logs and audit records: give one a name`,
        ]
      : [];
  });
}
