/**
 * One page of a list: `{data, next_cursor}`, a `Link: rel="next"` header, and a strong ETag
 * derived from the ids and row versions on the page (not from hashing the body).
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Request } from 'polka';
import type { Principal } from '../../shared/principal.ts';
import { isAdmin } from '../../shared/principal.ts';
import type { KeysetPosition } from '../data/keyset.ts';
import type { CursorCodec } from '../http/cursor.ts';
import { sendRepresentation } from '../http/respond.ts';

/**
 * What a cursor is bound to: the caller's view and every parameter except the position and
 * the page size (a client may change the page size between pages, nothing else).
 */
export function cursorBinding(req: Request, principal: Principal): string {
  const params = [...new URLSearchParams(req.search ?? '')]
    .filter(([name]) => name !== 'cursor' && name !== 'limit')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const viewer = isAdmin(principal) ? '*' : principal.customerId;
  return `${req.path}|${viewer}|${new URLSearchParams(params).toString()}`;
}

export interface PageOptions<Row, Item> {
  rows: Row[];
  limit: number;
  toItem: (row: Row) => Item;
  position: (row: Row) => KeysetPosition;
  version: (row: Row) => string;
  cursors: CursorCodec;
  binding: string;
}

export function sendPage<Row, Item>(req: Request, res: ServerResponse, page: PageOptions<Row, Item>): void {
  const rows = page.rows.slice(0, page.limit);
  const last = rows.at(-1);
  const nextCursor =
    page.rows.length > page.limit && last !== undefined
      ? page.cursors.encode(page.position(last), page.binding)
      : null;

  const etag = `"l${createHash('sha256')
    .update(rows.map(page.version).join(','))
    .update(`|${nextCursor ?? ''}`)
    .digest('base64url')
    .slice(0, 27)}"`;
  const headers: Record<string, string> = {};
  if (nextCursor !== null) {
    const params = new URLSearchParams(req.search ?? '');
    params.set('cursor', nextCursor);
    headers['Link'] = `<${req.path}?${params.toString()}>; rel="next"`;
  }
  sendRepresentation(req, res, {
    etag,
    body: { data: rows.map(page.toItem), next_cursor: nextCursor },
    headers,
  });
}
