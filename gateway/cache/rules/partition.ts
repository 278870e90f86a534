/**
 * Which stored responses a request may see (RFC 9111 section 3.5, RFC 9213).
 *
 * Entries live in partitions: the shared one, and one per customer-and-scopes. A request
 * without credentials sees only the shared partition. A request with credentials sees its own
 * partition, then the shared one. A response to a request with credentials is stored:
 * - in the caller's partition when the service sent targeted directives (Portico-Cache-Control):
 *   the service allows the gateway to keep it for that customer, and only a caller with the
 *   same customer and the same scopes may get it (a caller without the scope must still get
 *   the service's 403);
 * - in the shared partition when plain Cache-Control explicitly allows it (public, s-maxage,
 *   must-revalidate);
 * - nowhere otherwise.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { isAdmin, type Principal } from '../../../shared/principal.ts';
import type { ResponseSemantics } from './response-semantics.ts';

/** The partition every caller may read. */
export const SHARED_PARTITION = 'shared';

/** Who is asking, as far as partitions are concerned. */
export interface Caller {
  /** The request carried credentials (a principal was established, or Authorization was sent). */
  authenticated: boolean;
  /** The caller's own partition, when a principal is known. */
  own?: string;
  /**
   * Whose byte budget the caller's own entries count against (entry-store.ts): its customer,
   * whatever the scopes, so that more scope sets do not buy a customer more of the cache.
   */
  owner?: string;
}

const digest = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('base64url');

/**
 * Per principal object: the verified-token cache hands out the same frozen principal for every
 * request of a token, so its two digests are made once per token, not once per request.
 */
const callers = new WeakMap<Principal, Caller>();

/** The caller's partition: customer, sorted scopes and the admin marker, digested. */
export function callerOf(principal: Principal | undefined, headers: IncomingHttpHeaders): Caller {
  if (principal === undefined) return { authenticated: headers.authorization !== undefined };
  let caller = callers.get(principal);
  if (caller === undefined) {
    const scopes = [...new Set(principal.scopes)].sort().join(' ');
    caller = {
      authenticated: true,
      own: `c:${digest([principal.customerId, scopes, isAdmin(principal)])}`,
      owner: `o:${digest(principal.customerId)}`,
    };
    callers.set(principal, caller);
  }
  return caller;
}

/** Partitions to look in, most specific first. */
export function lookupPartitions(caller: Caller): string[] {
  return caller.own === undefined ? [SHARED_PARTITION] : [caller.own, SHARED_PARTITION];
}

/** Where a response is stored: its partition, and the owner whose budget it counts against. */
export type Placement = { partition: string; owner: string };

const SHARED: Placement = { partition: SHARED_PARTITION, owner: SHARED_PARTITION };

/** The partition a response is stored in, or the reason it is not stored. */
export function storePartition(caller: Caller, semantics: ResponseSemantics): Placement | { reason: string } {
  if (!caller.authenticated) return SHARED;
  if (semantics.targeted)
    return caller.own === undefined || caller.owner === undefined
      ? { reason: 'authorization' }
      : { partition: caller.own, owner: caller.owner };
  return semantics.sharableWithAuthorization ? SHARED : { reason: 'authorization' };
}
