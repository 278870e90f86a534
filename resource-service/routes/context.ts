/** What route handlers share: the database, limits and the cursor codec. */
import type { Sql } from 'postgres';
import type { CursorCodec } from '../http/cursor.ts';
import type { Principal } from '../../shared/principal.ts';
import { isAdmin } from '../../shared/principal.ts';
import { HttpProblem } from '../../shared/errors.ts';
import type { OwnerScope } from '../data/db.ts';
import { UUID_PATTERN } from '../model/limits.ts';

export interface RouteContext {
  sql: Sql;
  maxBodyBytes: number;
  cursors: CursorCodec;
}

/** Admins see every customer's rows; everyone else, their own. */
export function ownerScope(principal: Principal): OwnerScope {
  return isAdmin(principal) ? 'all-customers' : { customerId: principal.customerId };
}

const UUID = new RegExp(UUID_PATTERN);

/** A path id that cannot exist is answered like one that does not: 404, same body. */
export function uuidParam(value: string | undefined, what: string): string {
  if (value === undefined || !UUID.test(value)) throw notFound(what);
  return value;
}

export function notFound(what: string): HttpProblem {
  return new HttpProblem('ERR_NOT_FOUND', `No such ${what}`);
}
