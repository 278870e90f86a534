/**
 * The paths a successful unsafe request makes stale (RFC 9111 section 4.4): its own target,
 * Location and Content-Location when they are on this origin (another host's URIs must not be
 * invalidated, to avoid denial of service), and the service's `Portico-Invalidates` paths,
 * each in its canonical spelling.
 */
import { canonicalPath } from '../../../shared/canonical-path.ts';
import { CACHE_INVALIDATES, parseInvalidates } from '../../../shared/cache-headers.ts';
import { joinField } from './directives.ts';

/** Paths (no query) to invalidate after a successful unsafe request. */
export function invalidationTargets(
  path: string,
  target: string,
  host: string | undefined,
  headers: Record<string, string | string[]>,
): string[] {
  const paths = [path];
  if (host !== undefined) {
    let base: URL | undefined;
    try {
      base = new URL(target, `https://${host}`);
    } catch {
      base = undefined;
    }
    for (const name of ['location', 'content-location']) {
      const value = joinField(headers[name])?.trim();
      if (value === undefined || value === '' || base === undefined) continue;
      try {
        const url = new URL(value, base);
        if (url.host === base.host) paths.push(url.pathname);
      } catch {
        // An unparsable reference names nothing to invalidate.
      }
    }
  }
  paths.push(...parseInvalidates(joinField(headers[CACHE_INVALIDATES])));
  // Entries are stored under canonical paths only (the route stage refuses the others), so a
  // reference spelled another way, such as `cus%3A1` for `cus:1`, must name the same entries.
  const canonical = paths.flatMap((p) => canonicalPath(p) ?? []);
  return [...new Set(canonical)];
}

/** RFC 9110 section 9.2.1; every other method, unknown ones included, is unsafe (4.4). */
export const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);
