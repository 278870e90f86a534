/**
 * Keyset pagination, the one place its SQL is written: a page starts strictly after the last
 * row of the previous one in (sort key, id) order. Pages stay stable while rows are added, and
 * a deep page costs what the first one does, which OFFSET cannot promise.
 */
import type { Db } from './db.ts';

/** Where the previous page ended: its last row's sort key (ISO 8601, milliseconds) and id. */
export interface KeysetPosition {
  at: string;
  id: string;
}

export interface KeysetPage {
  limit: number;
  descending: boolean;
  after?: KeysetPosition;
}

/** The two columns a list is ordered by, as `alias.column` or `column`. */
export interface KeysetColumns {
  at: string;
  id: string;
}

/**
 * The parts of one page's query: `seek` (an `and ...` condition, empty on the first page),
 * `order` and `limit`. The limit asks for one row more than the page, so that the caller knows
 * whether a next page exists.
 */
export function keysetClauses(db: Db, columns: KeysetColumns, page: KeysetPage) {
  const at = db(columns.at);
  const id = db(columns.id);
  const { after } = page;
  const seek =
    after === undefined
      ? db``
      : page.descending
        ? db`and (${at}, ${id}) < (${after.at}::timestamptz, ${after.id}::uuid)`
        : db`and (${at}, ${id}) > (${after.at}::timestamptz, ${after.id}::uuid)`;
  const order = page.descending ? db`${at} desc, ${id} desc` : db`${at} asc, ${id} asc`;
  return { seek, order, limit: page.limit + 1 };
}
