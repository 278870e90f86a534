/**
 * Which route takes a request: by path prefix (whole segments), then `hosts`, `headers` and
 * `methods` (config/schema/route-match.ts). The most specific match wins, in this order:
 *
 * 1. the longest prefix;
 * 2. a host named exactly, then a `*.` wildcard, then a route naming no host;
 * 3. more `headers` required before fewer;
 * 4. a route listing `methods` before one taking every method;
 * 5. the order of the file.
 *
 * Entries are sorted so once at start-up; a request walks them once and takes the first that
 * matches (O(routes), no allocation on a hit). When the path, host and headers of some route
 * match but none of its methods, and no other route takes the request, the answer is 405 with
 * the methods those routes take.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { RouteDefinition } from '../config/schema/routes.ts';

interface Entry {
  readonly route: RouteDefinition;
  readonly prefix: string;
  /** What a path below the prefix starts with (`/` for the catch-all). */
  readonly below: string;
  /** Exact host names; undefined when the entry is by wildcard or takes any host. */
  readonly exactHosts: ReadonlySet<string> | undefined;
  /** `.example.com` for `*.example.com`; undefined when the entry is by exact name or any host. */
  readonly hostSuffixes: readonly string[] | undefined;
  /** Lower-case names and their exact values. */
  readonly headers: readonly (readonly [string, string])[];
  readonly methods: ReadonlySet<string> | undefined;
  readonly rank: number;
}

export type RouteLookup =
  | { readonly route: RouteDefinition; readonly allow?: undefined }
  | { readonly route: undefined; readonly allow: readonly string[] | undefined };

const NO_ROUTE: RouteLookup = { route: undefined, allow: undefined };

export class RouteTable {
  readonly #entries: readonly Entry[];
  /** Whether any route names hosts: the request's host is looked at only then. */
  readonly usesHosts: boolean;
  /** One lookup object per route, made once: a hit allocates nothing. */
  readonly #hits: ReadonlyMap<RouteDefinition, RouteLookup>;

  constructor(routes: readonly RouteDefinition[]) {
    const entries = routes.flatMap(entriesOf);
    // Stable: equal ranks keep the file's order.
    entries.sort((a, b) => b.prefix.length - a.prefix.length || b.rank - a.rank);
    this.#entries = entries;
    this.usesHosts = routes.some((route) => route.hosts !== undefined);
    this.#hits = new Map(routes.map((route) => [route, { route }]));
  }

  /** The route of a canonical path, or why none: `allow` when only the method missed. */
  find(path: string, method: string, host: string, headers: IncomingHttpHeaders): RouteLookup {
    let allow: Set<string> | undefined;
    for (const entry of this.#entries) {
      if (path !== entry.prefix && !path.startsWith(entry.below)) continue;
      if (!hostMatches(entry, host) || !headersMatch(entry, headers)) continue;
      if (entry.methods === undefined || entry.methods.has(method))
        return this.#hits.get(entry.route) ?? NO_ROUTE;
      allow ??= new Set();
      for (const name of entry.methods) allow.add(name);
    }
    return allow === undefined ? NO_ROUTE : { route: undefined, allow: [...allow] };
  }
}

/** One entry for a route's exact names and one for its wildcards, each ranked as what it matches. */
function entriesOf(route: RouteDefinition): Entry[] {
  const prefix = route.prefix;
  const headers = Object.entries(route.headers ?? {}).map(
    ([name, value]) => [name.toLowerCase(), value] as const,
  );
  const methods = route.methods === undefined ? undefined : new Set(route.methods);
  const rank = (hostRank: number) => hostRank * 10_000 + headers.length * 2 + (methods === undefined ? 0 : 1);
  const base = { route, prefix, below: prefix === '/' ? '/' : `${prefix}/`, headers, methods };
  if (route.hosts === undefined)
    return [{ ...base, exactHosts: undefined, hostSuffixes: undefined, rank: rank(0) }];
  const exact = route.hosts.filter((host) => !host.startsWith('*.'));
  const wildcards = route.hosts.filter((host) => host.startsWith('*.')).map((host) => host.slice(1));
  const entries: Entry[] = [];
  if (exact.length > 0)
    entries.push({ ...base, exactHosts: new Set(exact), hostSuffixes: undefined, rank: rank(2) });
  if (wildcards.length > 0)
    entries.push({ ...base, exactHosts: undefined, hostSuffixes: wildcards, rank: rank(1) });
  return entries;
}

function hostMatches(entry: Entry, host: string): boolean {
  if (entry.exactHosts !== undefined) return entry.exactHosts.has(host);
  if (entry.hostSuffixes === undefined) return true;
  for (const suffix of entry.hostSuffixes)
    if (host.length > suffix.length && host.endsWith(suffix)) return true;
  return false;
}

function headersMatch(entry: Entry, headers: IncomingHttpHeaders): boolean {
  for (const [name, value] of entry.headers) {
    const sent = headers[name];
    if ((Array.isArray(sent) ? sent.join(', ') : sent) !== value) return false;
  }
  return true;
}

/** The Host (or :authority) as routes name it: lower case, without its port. */
export function routingHost(host: string | undefined): string {
  if (host === undefined) return '';
  const lower = host.toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  const colon = lower.lastIndexOf(':');
  return colon === -1 ? lower : lower.slice(0, colon);
}
