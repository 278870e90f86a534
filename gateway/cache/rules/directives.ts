/**
 * Cache directives as a cache must read them: `Cache-Control` (RFC 9111 section 5.2) and the
 * targeted `Portico-Cache-Control` field (RFC 9213, a Structured Fields dictionary).
 */

/** Directive name (lowercase) → its argument, or `true` for a directive without one. */
export type Directives = Map<string, string | true>;

/** RFC 9111 section 1.2.2: larger delta-seconds are read as 2^31. */
const MAX_DELTA_SECONDS = 2147483648;

/** A field's value as Node or undici hand it over: one line, or one per received line. */
export type FieldValue = string | readonly string[] | undefined;

/** The first line of a field received on one or several lines (Node gives a list for some). */
export function firstValue(value: FieldValue): string | undefined {
  return typeof value === 'string' ? value : value?.[0];
}

/** One string for a field received on one or several lines (RFC 9110 section 5.3). */
export function joinField(value: FieldValue): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : value.join(', ');
}

/**
 * Parses `Cache-Control`. Names are case-insensitive (RFC 9111 section 5.2); commas inside
 * quoted arguments do not split; for a repeated directive the first occurrence wins, which
 * section 4.2.1 allows ("either the first occurrence should be used or ... stale").
 */
export function parseCacheControl(value: FieldValue): Directives {
  const directives: Directives = new Map();
  const text = joinField(value);
  if (text === undefined) return directives;
  for (const member of splitOutsideQuotes(text)) {
    const equals = member.indexOf('=');
    const rawName = (equals === -1 ? member : member.slice(0, equals)).trimStart();
    const name = rawName.trimEnd().toLowerCase();
    // `max-age =5` is not the token max-age followed by "=" (RFC 9111 section 5.2): ignored.
    if (name === '' || directives.has(name) || (equals !== -1 && rawName !== rawName.trimEnd())) continue;
    if (equals === -1) {
      directives.set(name, true);
      continue;
    }
    // Nor is `max-age= 5`: the argument starts right after "=", so it stays invalid.
    const raw = member.slice(equals + 1).trimEnd();
    directives.set(name, raw.startsWith('"') ? unquote(raw) : raw);
  }
  return directives;
}

/** `delta-seconds` (RFC 9111 section 1.2.2): digits only; anything else is invalid. */
export function deltaSeconds(value: string | true | undefined): number | undefined {
  if (typeof value !== 'string' || !/^[0-9]+$/.test(value)) return undefined;
  return Math.min(Number(value), MAX_DELTA_SECONDS);
}

function splitOutsideQuotes(text: string): string[] {
  const members: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] ?? '';
    if (quoted && char === '\\') {
      current += char + (text[i + 1] ?? '');
      i++;
      continue;
    }
    if (char === '"') quoted = !quoted;
    if (char === ',' && !quoted) {
      members.push(current);
      current = '';
      continue;
    }
    current += char;
  }
  members.push(current);
  return members;
}

function unquote(raw: string): string {
  const end = raw.lastIndexOf('"');
  const inner = end > 0 ? raw.slice(1, end) : raw.slice(1);
  return inner.replace(/\\(.)/g, '$1');
}

/**
 * Parses a targeted cache-control field (RFC 9213 section 2.1): a Structured Fields
 * dictionary (RFC 8941 section 3.2). A field that fails to parse (an upper-case key, space
 * around `=`, a stray token) is ignored as a whole, so `undefined` comes back and the cache
 * falls back to `Cache-Control`. Boolean false members (`?0`) count as absent; parameters are
 * ignored; a member whose value has the wrong type for its directive (`max-age="60"`,
 * `max-age=1.5`, `no-store=3`) is not consumed (section 2.1, "SHOULD NOT consume"), the rest
 * of the field still applies. Unknown directives are kept and ignored by their readers.
 */
export function parseTargeted(value: FieldValue): Directives | undefined {
  const text = joinField(value)?.trim();
  if (text === undefined || text === '') return undefined;
  const directives: Directives = new Map();
  let rest = text;
  for (;;) {
    const key = /^[a-z*][a-z0-9_.*-]*/.exec(rest)?.[0];
    if (key === undefined) return undefined;
    rest = rest.slice(key.length);
    let item: BareItem = { kind: 'boolean', value: true, rest };
    if (rest.startsWith('=')) {
      const parsed = bareItem(rest.slice(1));
      if (parsed === undefined) return undefined;
      item = parsed;
    }
    const params = skipParameters(item.rest);
    if (params === undefined) return undefined;
    rest = params;
    // RFC 8941 section 4.2.2: a later member of the same key overwrites the earlier one.
    if (item.value === false || !fitsDirective(key, item)) directives.delete(key);
    else directives.set(key, item.value);
    rest = rest.replace(/^[ \t]*/, '');
    if (rest === '') return directives;
    if (!rest.startsWith(',')) return undefined;
    rest = rest.slice(1).replace(/^[ \t]*/, '');
    if (rest === '') return undefined;
  }
}

/** An RFC 8941 bare item, its type, and the text after it. */
interface BareItem {
  kind: 'decimal' | 'integer' | 'string' | 'token' | 'bytes' | 'boolean';
  value: string | boolean;
  rest: string;
}

function bareItem(text: string): BareItem | undefined {
  const patterns: [BareItem['kind'], RegExp, (m: string) => string | boolean][] = [
    ['decimal', /^-?[0-9]{1,12}\.[0-9]{1,3}(?![0-9])/, (m) => m],
    ['integer', /^-?[0-9]{1,15}(?![0-9.])/, (m) => m],
    // RFC 8941 section 3.3.3: printable ASCII, with \" and \\ escaped.
    ['string', /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*"/, (m) => m.slice(1, -1).replace(/\\(.)/g, '$1')],
    ['token', /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*/, (m) => m],
    ['bytes', /^:[A-Za-z0-9+/=]*:/, (m) => m],
    ['boolean', /^\?[01]/, (m) => m === '?1'],
  ];
  for (const [kind, pattern, read] of patterns) {
    const match = pattern.exec(text)?.[0];
    if (match !== undefined) return { kind, value: read(match), rest: text.slice(match.length) };
  }
  return undefined;
}

/** Directives whose argument is delta-seconds: an sf-integer, not negative (RFC 9213 section 2.1). */
const DELTA_DIRECTIVES = new Set(['max-age', 's-maxage', 'stale-while-revalidate', 'stale-if-error']);
/** Directives that take an optional list of field names: true, or an sf-string. */
const FIELD_LIST_DIRECTIVES = new Set(['no-cache', 'private']);
/** Directives without an argument (RFC 9111 section 5.2.2, RFC 8246). */
const FLAG_DIRECTIVES = new Set([
  'must-revalidate',
  'must-understand',
  'no-store',
  'no-transform',
  'proxy-revalidate',
  'public',
  'immutable',
]);

/** Whether a targeted member's value has the type its directive takes; unknown ones pass. */
function fitsDirective(key: string, item: BareItem): boolean {
  if (DELTA_DIRECTIVES.has(key)) return item.kind === 'integer' && !String(item.value).startsWith('-');
  if (FIELD_LIST_DIRECTIVES.has(key)) return item.value === true || item.kind === 'string';
  if (FLAG_DIRECTIVES.has(key)) return item.value === true;
  return true;
}

function skipParameters(text: string): string | undefined {
  let rest = text;
  while (rest.startsWith(';')) {
    rest = rest.slice(1).replace(/^ */, '');
    const key = /^[a-z*][a-z0-9_.*-]*/.exec(rest)?.[0];
    if (key === undefined) return undefined;
    rest = rest.slice(key.length);
    if (rest.startsWith('=')) {
      const parsed = bareItem(rest.slice(1));
      if (parsed === undefined) return undefined;
      rest = parsed.rest;
    }
  }
  return rest;
}
