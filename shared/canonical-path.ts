/**
 * The one spelling of a request path that the gateway and the service accept. Anything the
 * gateway matches on a path (route, rate-limit policy, cache key, invalidation, audit) and what
 * the service routes on must be the same string, or an alias of a path escapes what is keyed on
 * it: a limit on `/v1/orders` that `/v1/orders/` does not count, a cached order that a PATCH to
 * `/v1/%6Frders/{id}` does not invalidate. So every other spelling is refused (404), and only
 * where a path arrives from the service (Location, Portico-Invalidates) is it rewritten into
 * this form.
 *
 * The canonical spelling (RFC 3986 section 6.2.2, made strict):
 * - no empty segment: no `//` and no trailing slash (`/` alone excepted);
 * - a character is percent-encoded only when it may not appear literally in a segment (all of
 *   unreserved, sub-delims, `:` and `@` may), so `cus:1` and never `cus%3A1`;
 * - percent-encodings in upper-case hex (`%2F`, not `%2f`);
 * - no dot segment, literal or encoded.
 * Letter case is the service's to decide: it matches paths and ids case-sensitively, so
 * `/v1/ORDERS` and an upper-case UUID are simply not found there.
 */

/** What may appear unencoded in a path segment: RFC 3986 `pchar` less `pct-encoded`. */
const LITERAL = /^[A-Za-z0-9\-._~!$&'()*+,;=:@]$/;
/** The common case, checked in one pass: literal characters only, no empty segment. */
const PLAIN = /^(?:\/[A-Za-z0-9\-._~!$&'()*+,;=:@]+)+$/;

/** True when `path` (no query) is spelled the one accepted way. */
export function isCanonicalPath(path: string): boolean {
  if (PLAIN.test(path)) return !hasDotSegment(path);
  return path === '/' || canonicalPath(path) === path;
}

/**
 * `path` in its canonical spelling, or undefined when it has none: not absolute, a malformed
 * percent-encoding, or a dot segment.
 */
export function canonicalPath(path: string): string | undefined {
  if (!path.startsWith('/')) return undefined;
  const segments: string[] = [];
  for (const raw of path.split('/')) {
    if (raw === '') continue;
    const segment = canonicalSegment(raw);
    if (segment === undefined || segment === '.' || segment === '..') return undefined;
    segments.push(segment);
  }
  return `/${segments.join('/')}`;
}

function canonicalSegment(raw: string): string | undefined {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i] ?? '';
    if (ch === '%') {
      const hex = raw.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return undefined;
      const decoded = String.fromCharCode(Number.parseInt(hex, 16));
      out += LITERAL.test(decoded) ? decoded : `%${hex.toUpperCase()}`;
      i += 2;
    } else if (LITERAL.test(ch)) {
      out += ch;
    } else {
      const codePoint = raw.codePointAt(i) ?? 0;
      const char = String.fromCodePoint(codePoint);
      try {
        out += encodeURIComponent(char);
      } catch {
        return undefined; // a lone surrogate has no UTF-8 encoding
      }
      i += char.length - 1;
    }
  }
  return out;
}

function hasDotSegment(path: string): boolean {
  return path.includes('/.') && path.split('/').some((s) => s === '.' || s === '..');
}
