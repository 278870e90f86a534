/**
 * A response to POST stored as the answer to a later GET of the same URI (RFC 9111 section 4,
 * RFC 9110 section 9.3.3): "Responses to POST requests are only cacheable when they include
 * explicit freshness information and a Content-Location header field that has the same value
 * as the POST's target URI". Content-Location equal to the target says the content is a current
 * representation of the target resource (8.7), which is what a GET of it would return.
 *
 * Only 200 and 203, whose content is that representation (201 describes the creation, 204 has
 * none). The rest is decided as for a GET (storability, partitions, Vary): a POST with
 * credentials is shared only when public, s-maxage or must-revalidate allow it, or kept for that
 * customer under a targeted field. The POST still invalidates first (4.4); what is stored then
 * is the POST's own answer.
 */
import { joinField } from './directives.ts';
import type { Headers, ResponseSemantics } from './response-semantics.ts';
import { hasExplicitFreshness } from './storability.ts';

const REPRESENTATION_STATUSES = new Set([200, 203]);

/** Whether the answer to a POST of `target` (path and query) at `authority` may serve a GET of it. */
export function postAnswersGet(
  target: string,
  authority: string,
  response: { status: number; headers: Headers },
  semantics: ResponseSemantics,
): boolean {
  if (!REPRESENTATION_STATUSES.has(response.status)) return false;
  if (!hasExplicitFreshness(response.headers, semantics)) return false;
  const location = response.headers['content-location'];
  // One value only: two Content-Location lines name no one resource.
  if (Array.isArray(location)) return false;
  const value = joinField(location)?.trim();
  if (value === undefined || value === '') return false;
  return sameResource(value, target, authority);
}

/**
 * Content-Location, resolved against the target, names the target: same authority, same path
 * and query. The scheme is not compared: the gateway answers one origin per authority (its
 * service may see plain HTTP behind it and say so), as invalidation-targets.ts reads it too.
 */
function sameResource(location: string, target: string, authority: string): boolean {
  try {
    const base = new URL(target, `https://${authority}`);
    const url = new URL(location, base);
    return url.host === base.host && url.pathname === base.pathname && url.search === base.search;
  } catch {
    return false;
  }
}
