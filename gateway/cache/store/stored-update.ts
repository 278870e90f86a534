/**
 * A stored response updated from the header fields of a later response about the same
 * representation: a 304 to a revalidation (RFC 9111 section 4.3.4) or a 200 to a HEAD request
 * (section 4.3.5). Section 3.2 says which fields change; this file also keeps the updated
 * response's age and date right (sections 4.2.3 and 5.1, RFC 9110 section 6.6.1).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { StoredResponse } from './entry-store.ts';
import { formatHttpDate } from '../../foundation/http-date.ts';
import type { PolicyFactory, PolicyRequest } from '../rules/policy.ts';
import { readSemantics } from '../rules/response-semantics.ts';
import { storability } from '../rules/storability.ts';
import { NOT_UPDATED } from './stored-fields.ts';
import { firstValue } from '../rules/directives.ts';

/** What an update needs from its cache. */
export interface UpdateDeps {
  policies: PolicyFactory;
  now: () => number;
  targetedFields: readonly string[];
}

/** The updated entry, and whether it may stay stored (3.1: an update can forbid storing). */
export interface Update {
  entry: StoredResponse;
  storable: boolean;
}

/** `entry` with the fields of `incoming` (a 304's or a HEAD response's) applied. */
export function updateStored(
  entry: StoredResponse,
  view: PolicyRequest,
  /** When the request that brought `incoming` went upstream (4.2.3). */
  requestTime: number,
  incoming: Record<string, string | string[]>,
  deps: UpdateDeps,
): Update {
  const now = deps.now();
  const headers = updatedFields(entry.headers, incoming, now, deps.targetedFields);
  const semantics = readSemantics(headers, deps.targetedFields);
  const policy = deps.policies.create(view, {
    status: entry.status,
    headers,
    semantics,
    requestTime,
    responseTime: now,
  });
  const updated: StoredResponse = { ...entry, headers, semantics, policy, storedAt: now };
  delete updated.revalidating;
  // A 304 can bring no-store, or a Set-Cookie that must not be shared: the update then
  // answers this request only.
  const verdict = storability({
    method: 'GET',
    status: entry.status,
    headers,
    semantics,
    requestNoStore: false,
    policy,
  });
  return { entry: updated, storable: verdict.ok };
}

/**
 * 3.2: the incoming fields replace the stored ones, except those describing the stored body
 * or this exchange, and those the incoming response itself says not to store (no-cache="f").
 */
function updatedFields(
  stored: Record<string, string | string[]>,
  incoming: Record<string, string | string[]>,
  receivedAt: number,
  targetedFields: readonly string[],
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = { ...stored };
  const omitted = readSemantics(incoming, targetedFields).omittedFields;
  for (const [name, value] of Object.entries(incoming))
    if (!NOT_UPDATED.has(name) && !omitted.includes(name)) headers[name] = value;
  // 4.2.3: the stored Age told how old the stored response was when it arrived; the updated
  // one is as old as the update says (no Age: it came from the origin just now).
  if (incoming['age'] === undefined) delete headers['age'];
  // RFC 9110 section 6.6.1: a response without Date is dated when received; keeping the
  // stored Date would make the just-validated response look as old as the first one.
  if (incoming['date'] === undefined) headers['date'] = formatHttpDate(receivedAt);
  return headers;
}

/**
 * 4.3.5: a HEAD response may update a stored GET response only when the validators it carries
 * (at least one) equal the stored ones, and its Content-Length, if any, the stored body's
 * length; otherwise the stored response is no longer to be trusted.
 */
export function headMatches(
  entry: StoredResponse,
  head: IncomingHttpHeaders | Record<string, string | string[]>,
): boolean {
  let received = 0;
  for (const name of ['etag', 'last-modified']) {
    const value = firstValue(head[name]);
    if (value === undefined) continue;
    received++;
    if (value.trim() !== firstValue(entry.headers[name])?.trim()) return false;
  }
  const length = firstValue(head['content-length']);
  if (length !== undefined && entry.status !== 204 && Number(length) !== entry.body.length) return false;
  return received > 0;
}
