/**
 * Range requests answered from a complete stored response (RFC 9111 section 3.4 leaves how to
 * the cache; RFC 9110 section 14 says what to answer): one range as a 206 with Content-Range,
 * several as multipart/byteranges, none satisfiable as a 416 whose Content-Range gives only the
 * length.
 * If-Range (RFC 9110 section 13.1.5) decides first whether the Range applies at all.
 *
 * The Range grammar (14.1.2) is read strictly: a Range that does not parse, names another
 * unit, or asks for too many pieces is ignored, and the client gets the whole 200, which is
 * always a correct answer to a range request (14.2: a server MAY ignore Range).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { HttpProblem } from '../../../shared/errors.ts';
import { parseHttpDate } from '../../foundation/http-date.ts';
import { firstValue } from '../rules/directives.ts';

/** One byte range, first and last position inclusive (14.1.2). */
export interface ByteRange {
  first: number;
  last: number;
}

/** What a Range field asks of a representation of `length` bytes. */
export type RangeAsk =
  { kind: 'whole' } | { kind: 'ranges'; ranges: ByteRange[] } | { kind: 'unsatisfiable' };

/** More range-specs than this in one request: ignored, the whole representation is sent. */
const MAX_RANGES = 64;
const RANGE_SPEC = /^(?:([0-9]+)-([0-9]*)|-([0-9]+))$/;

/** Reads a Range field against a representation of `length` bytes (14.1.1, 14.1.2, 14.2). */
export function readRange(value: string | undefined, length: number): RangeAsk {
  if (value === undefined || length === 0) return { kind: 'whole' };
  const equals = value.indexOf('=');
  // The unit is case-insensitive (14.1); no whitespace around "=" in the grammar.
  if (equals === -1 || value.slice(0, equals).toLowerCase() !== 'bytes') return { kind: 'whole' };
  // 5.6.1.2: empty list elements are accepted and ignored.
  const specs = value
    .slice(equals + 1)
    .split(',')
    .map((spec) => spec.trim())
    .filter((spec) => spec !== '');
  if (specs.length === 0 || specs.length > MAX_RANGES) return { kind: 'whole' };
  const ranges: ByteRange[] = [];
  for (const spec of specs) {
    const match = RANGE_SPEC.exec(spec);
    if (match === null) return { kind: 'whole' };
    const [, first, last, suffix] = match;
    if (suffix !== undefined) {
      // A suffix-range is satisfiable when non-zero; a longer one is the whole representation.
      if (Number(suffix) > 0) ranges.push({ first: Math.max(0, length - Number(suffix)), last: length - 1 });
      continue;
    }
    if (last !== '' && Number(last) < Number(first)) return { kind: 'whole' }; // invalid (14.1.1)
    if (Number(first) >= length) continue; // unsatisfiable on its own
    ranges.push({
      first: Number(first),
      last: last === '' ? length - 1 : Math.min(Number(last), length - 1),
    });
  }
  if (ranges.length === 0) return { kind: 'unsatisfiable' };
  return { kind: 'ranges', ranges: coalesceOverlaps(ranges) };
}

/**
 * 14.2: overlapping ranges are a known way to make a server send the same bytes many times;
 * when any overlap (or touch), all are merged in ascending order, otherwise the client's order
 * is kept (15.3.7.2).
 */
function coalesceOverlaps(ranges: ByteRange[]): ByteRange[] {
  const sorted = [...ranges].sort((a, b) => a.first - b.first);
  const merged: ByteRange[] = [];
  for (const range of sorted) {
    const previous = merged.at(-1);
    if (previous !== undefined && range.first <= previous.last + 1)
      previous.last = Math.max(previous.last, range.last);
    else merged.push({ ...range });
  }
  return merged.length === ranges.length ? ranges : merged;
}

/**
 * RFC 9110 section 8.8.2.2: for an intermediate cache, a stored Last-Modified is strong when
 * the stored Date is at least 60 seconds after it.
 */
const STRONG_LAST_MODIFIED_MS = 60_000;

/** The stored Last-Modified (ms) when it is a strong validator (8.8.2.2), else undefined. */
export function strongLastModified(headers: Record<string, string | string[]>): number | undefined {
  const lastModified = parseHttpDate(headers['last-modified']);
  const sent = parseHttpDate(headers['date']);
  if (lastModified === undefined || sent === undefined) return undefined;
  return sent - lastModified >= STRONG_LAST_MODIFIED_MS ? lastModified : undefined;
}

/**
 * RFC 9110 section 13.1.5: true when the Range may be applied. An entity-tag must match the
 * stored ETag by strong comparison; a date must equal Last-Modified exactly, and only counts
 * when Last-Modified is strong (strongLastModified). Anything else, an unparsable If-Range
 * included, sends the whole representation.
 */
export function ifRangeHolds(
  request: IncomingHttpHeaders,
  stored: Record<string, string | string[]>,
): boolean {
  const condition = firstValue(request['if-range'])?.trim();
  if (condition === undefined) return true;
  if (condition.startsWith('"') || condition.startsWith('W/')) {
    const etag = firstValue(stored['etag'])?.trim();
    return !condition.startsWith('W/') && etag !== undefined && !etag.startsWith('W/') && etag === condition;
  }
  const date = parseHttpDate(condition);
  return date !== undefined && date === strongLastModified(stored);
}

/** The 416 for a Range none of whose ranges the representation can satisfy (15.5.17). */
export function rangeNotSatisfiable(length: number, cacheStatus: string): HttpProblem {
  return new HttpProblem('ERR_RANGE_NOT_SATISFIABLE', `no requested range overlaps the ${length} bytes`, {
    headers: { 'Content-Range': `bytes */${length}`, 'Cache-Status': cacheStatus },
  });
}

/** The fields and body of a 206 for `ranges` of `body` (15.3.7), given the 200's fields. */
export function partialContent(
  headers: Record<string, string | string[]>,
  body: Buffer,
  ranges: readonly ByteRange[],
): { headers: Record<string, string | string[]>; body: Buffer } {
  const out: Record<string, string | string[]> = { ...headers };
  const total = body.length;
  const only = ranges.length === 1 ? ranges[0] : undefined;
  if (only !== undefined) {
    out['content-range'] = `bytes ${only.first}-${only.last}/${total}`;
    const slice = body.subarray(only.first, only.last + 1);
    out['content-length'] = String(slice.length);
    return { headers: out, body: slice };
  }
  const boundary = randomBytes(12).toString('hex');
  const type = firstValue(headers['content-type']);
  const parts: Buffer[] = [];
  for (const range of ranges) {
    const head =
      `\r\n--${boundary}\r\n` +
      (type === undefined ? '' : `Content-Type: ${type}\r\n`) +
      `Content-Range: bytes ${range.first}-${range.last}/${total}\r\n\r\n`;
    parts.push(Buffer.from(head, 'latin1'), body.subarray(range.first, range.last + 1));
  }
  parts.push(Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1'));
  const multipart = Buffer.concat(parts);
  out['content-type'] = `multipart/byteranges; boundary=${boundary}`;
  out['content-length'] = String(multipart.length);
  delete out['content-range'];
  return { headers: out, body: multipart };
}
