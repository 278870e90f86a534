/** What route handlers share: the database, limits and the cursor codec. */
import type { Sql } from 'postgres';
import type { CursorCodec } from '../http/cursor.ts';
import type { Principal } from '../../shared/principal.ts';
import { isAdmin } from '../../shared/principal.ts';
import { HttpProblem } from '../../shared/errors.ts';
import type { OwnerScope } from '../data/db.ts';

export interface RouteContext {
  sql: Sql;
  maxBodyBytes: number;
  cursors: CursorCodec;
}

/** Admins see every customer's rows; everyone else, their own. */
export function ownerScope(principal: Principal): OwnerScope {
  return isAdmin(principal) ? 'all-customers' : { customerId: principal.customerId };
}

/**
 * Lower case only: PostgreSQL writes UUIDs so, and an upper-case alias would be a second path.
 * The OpenAPI document states the same pattern for path ids.
 */
export const UUID_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
const UUID = new RegExp(UUID_PATTERN);

/** A path id that cannot exist is answered like one that does not: 404, same body. */
export function uuidParam(value: string | undefined, what: string): string {
  if (value === undefined || !UUID.test(value)) throw notFound(what);
  return value;
}

export function notFound(what: string): HttpProblem {
  return new HttpProblem('ERR_NOT_FOUND', `No such ${what}`);
}
