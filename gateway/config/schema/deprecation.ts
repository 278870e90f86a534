/**
 * A route's `deprecation` key: when the route was (or will be) deprecated, when it goes away,
 * and where its users read why.
 */
import { Type, type Static } from '@sinclair/typebox';

/** RFC 3339 date-time, or a full date meaning midnight UTC. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))?$/;

export const DeprecationSchema = Type.Object(
  {
    at: Type.String({
      description:
        'When the route is (or was) deprecated, as `2026-06-01` or `2026-06-01T00:00:00Z`: sent as `Deprecation: @<unix seconds>` (RFC 9745), a future date included.',
    }),
    sunset: Type.Optional(
      Type.String({
        description:
          'When the route is expected to stop answering, not before `at`: sent as `Sunset` (RFC 8594, an HTTP-date).',
      }),
    ),
    link: Type.Optional(
      Type.String({
        description:
          'An http(s) URL explaining the deprecation: sent as `Link: <url>; rel="deprecation"`, and with `rel="sunset"` too when `sunset` is set.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Marks every answer of the route as deprecated; calls are counted in /metrics (portico_deprecated_requests_total).',
  },
);
export type Deprecation = Static<typeof DeprecationSchema>;

/** Epoch milliseconds of a timestamp this schema accepts, or undefined. */
export function parseTimestamp(value: string): number | undefined {
  if (!TIMESTAMP.test(value)) return undefined;
  const ms = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** Checks the schema cannot say, for `routes[index].deprecation`; each is `path: problem`. */
export function checkDeprecation(deprecation: Deprecation, path: string): string[] {
  const problems: string[] = [];
  const at = parseTimestamp(deprecation.at);
  if (at === undefined) problems.push(`${path}.at: must be a date (2026-06-01) or an RFC 3339 date-time`);
  if (deprecation.sunset !== undefined) {
    const sunset = parseTimestamp(deprecation.sunset);
    if (sunset === undefined)
      problems.push(`${path}.sunset: must be a date (2026-06-01) or an RFC 3339 date-time`);
    else if (at !== undefined && sunset < at) problems.push(`${path}.sunset: must not be before at`);
  }
  if (deprecation.link !== undefined) {
    const url = URL.parse(deprecation.link);
    if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:'))
      problems.push(`${path}.link: must be an http: or https: URL`);
  }
  return problems;
}
