/**
 * Conditional requests (RFC 9110 section 13): entity-tag lists, If-None-Match and If-Match,
 * evaluated in section 13.2.2's order: If-Match first, on every method, reads included; then
 * If-None-Match (304 for a read, 412 for a write). If-Unmodified-Since and If-Modified-Since are
 * not evaluated: no resource here has a modification date (section 13.1.4 says to ignore them
 * then), and If-Match takes precedence over If-Unmodified-Since anyway.
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

/** True when If-None-Match names the current representation (weak comparison), or is `*`. */
function noneMatchFails(req: IncomingMessage, currentEtag: string): boolean {
  const tags = parseEntityTags(req.headers['if-none-match'], 'If-None-Match');
  if (tags === undefined) return false;
  if (tags === '*') return true;
  const current = currentEtag.replace(/^W\//, '');
  return tags.some((tag) => tag.opaque === current);
}

/**
 * True when a GET may be answered 304: If-None-Match matches. Throws 412 first when If-Match
 * does not (section 13.2.2, step 1).
 */
export function isNotModified(req: IncomingMessage, currentEtag: string): boolean {
  assertIfMatch(req, currentEtag);
  return noneMatchFails(req, currentEtag);
}

/**
 * The preconditions of a write to an existing resource: If-Match, then If-None-Match, whose `*`
 * or current tag means "only if it does not exist / has changed" (section 13.1.2): 412 either way.
 * Called inside the transaction that holds the row lock, like {@link assertIfMatch}.
 */
export function assertWritePreconditions(req: IncomingMessage, currentEtag: string): void {
  assertIfMatch(req, currentEtag);
  if (noneMatchFails(req, currentEtag)) throw preconditionFailed(currentEtag);
}

/**
 * Throws 412 when If-Match is present and does not match the current strong ETag; a weak tag
 * never matches (strong comparison). Called inside the transaction that holds the row lock, so
 * nothing can change between the check and the write.
 */
function assertIfMatch(req: IncomingMessage, currentEtag: string): void {
  const tags = parseEntityTags(req.headers['if-match'], 'If-Match');
  if (tags === undefined || tags === '*') return;
  if (!tags.some((tag) => !tag.weak && tag.opaque === currentEtag)) throw preconditionFailed(currentEtag);
}

function preconditionFailed(currentEtag: string): HttpProblem {
  return new HttpProblem('ERR_PRECONDITION_FAILED', 'The resource has changed since the ETag you sent', {
    headers: { ETag: currentEtag },
  });
}
