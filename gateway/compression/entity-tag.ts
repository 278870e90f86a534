/**
 * Entity tags of compressed representations. RFC 9110 section 8.8.3: a strong tag names one
 * representation, and a gzip body is not the identity one, so the gateway gives each encoding
 * its own strong tag by a suffix (`"o1.2"` → `"o1.2-br"`, the convention of Apache's
 * mod_deflate) rather than making tags weak as nginx does: a weak tag never passes If-Match's
 * strong comparison, and the service uses If-Match for optimistic concurrency.
 *
 * On the way upstream the suffixes are taken off again (If-Match, If-None-Match), so that the
 * service compares its own tags: a client that read the br representation and sends its tag
 * back in If-Match still updates, and a 304 for a tag sent with a suffix carries it back.
 * If-Range keeps the suffix: a range of the identity bytes would not fit the client's copy,
 * and a tag the service does not know gets the whole representation instead, as it should.
 *
 * The one ambiguity: a tag the service itself ends in `-br` or `-gzip` is read as ours. Its
 * conditional requests then compare a shorter tag and fail (412, or a full 200 instead of a
 * 304): never a false match.
 */
import type { UpstreamHeaders } from '../pipeline/upstream-headers.ts';

const SUFFIX = { br: '-br', gzip: '-gzip' } as const;
const SUFFIXED = /(W\/)?"([^"]*?)-(br|gzip)"/g;

/** The tag of the `encoding` representation; weak tags already cover every encoding. */
export function encodedTag(etag: string, encoding: 'br' | 'gzip'): string {
  if (etag.length < 2 || etag[0] !== '"' || etag[etag.length - 1] !== '"') return etag;
  return `${etag.slice(0, -1)}${SUFFIX[encoding]}"`;
}

/** The service's tag → the tag as the client holds it, for the tags a request had suffixed. */
export type RestoredTags = Map<string, string>;

/** Conditional fields as they go upstream, collected without allocating per request. */
const seen = { ifMatch: undefined as string | undefined, ifNoneMatch: undefined as string | undefined };
function collect(name: string, value: string): void {
  if (name === 'if-none-match')
    seen.ifNoneMatch = seen.ifNoneMatch === undefined ? value : `${seen.ifNoneMatch}, ${value}`;
  else if (name === 'if-match')
    seen.ifMatch = seen.ifMatch === undefined ? value : `${seen.ifMatch}, ${value}`;
}

/**
 * Takes the gateway's suffixes off If-Match and If-None-Match as they go upstream (the
 * client's, or the validators the cache set for a revalidation); returns what was restored,
 * or undefined when nothing carried a suffix (the usual case, which allocates nothing).
 */
export function restoreConditionalTags(headers: UpstreamHeaders): RestoredTags | undefined {
  seen.ifMatch = undefined;
  seen.ifNoneMatch = undefined;
  headers.forEach(collect);
  const { ifMatch, ifNoneMatch } = seen;
  let restored: RestoredTags | undefined;
  if (carriesSuffix(ifMatch)) restored = restore(headers, 'if-match', ifMatch, new Map<string, string>());
  if (carriesSuffix(ifNoneMatch))
    restored = restore(headers, 'if-none-match', ifNoneMatch, restored ?? new Map<string, string>());
  return restored;
}

function carriesSuffix(value: string | undefined): value is string {
  return value !== undefined && (value.includes('-br"') || value.includes('-gzip"'));
}

function restore(headers: UpstreamHeaders, name: string, value: string, tags: RestoredTags): RestoredTags {
  headers.set(
    name,
    value.replace(SUFFIXED, (tag: string, weak: string | undefined, opaque: string) => {
      const original = `${weak ?? ''}"${opaque}"`;
      tags.set(original, tag);
      return original;
    }),
  );
  return tags;
}
