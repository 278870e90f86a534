/**
 * Conditional requests (RFC 9110 section 13): entity-tag lists, If-None-Match and If-Match.
 */
import type { IncomingMessage } from 'node:http';
import { HttpProblem } from '../../shared/errors.ts';

interface EntityTag {
  weak: boolean;
  opaque: string;
}

const ENTITY_TAG = /^\s*(W\/)?("[\x21\x23-\x7e\x80-\xff]*")\s*(?:,|$)/;

/** Parses `*` or a comma-separated list of entity-tags; undefined when the header is absent. */
function parseEntityTags(value: string | undefined, header: string): '*' | EntityTag[] | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '*') return '*';
  const tags: EntityTag[] = [];
  let rest = value;
  while (rest.trim() !== '') {
    const match = ENTITY_TAG.exec(rest);
    if (match === null) {
      throw new HttpProblem('ERR_INVALID_HEADER', `${header} must be * or a list of quoted entity-tags`, {
        extensions: { errors: [{ header, detail: 'not a list of entity-tags' }] },
      });
    }
    tags.push({ weak: match[1] !== undefined, opaque: match[2] ?? '' });
    rest = rest.slice(match[0].length);
  }
  return tags;
}

/** True when a GET may be answered 304: If-None-Match matches (weak comparison). */
export function isNotModified(req: IncomingMessage, currentEtag: string): boolean {
  const tags = parseEntityTags(req.headers['if-none-match'], 'If-None-Match');
  if (tags === undefined) return false;
  if (tags === '*') return true;
  const current = currentEtag.replace(/^W\//, '');
  return tags.some((tag) => tag.opaque === current);
}

/**
 * Throws 412 when If-Match is present and does not match the current strong ETag; a weak tag
 * never matches (strong comparison). Called inside the transaction that holds the row lock, so
 * nothing can change between the check and the write.
 */
export function assertIfMatch(req: IncomingMessage, currentEtag: string): void {
  const tags = parseEntityTags(req.headers['if-match'], 'If-Match');
  if (tags === undefined || tags === '*') return;
  if (!tags.some((tag) => !tag.weak && tag.opaque === currentEtag)) {
    throw new HttpProblem('ERR_PRECONDITION_FAILED', 'The resource has changed since the ETag you sent', {
      headers: { ETag: currentEtag },
    });
  }
}
