/**
 * Whether a response's Content-Type is one the config says to compress. Compiled once from the
 * config; the answer per Content-Type value is remembered, since an API sends few distinct ones.
 */

/** Distinct Content-Type values remembered; past it the memo starts over. */
const MEMO_LIMIT = 256;

/** A test for Content-Type values, from patterns such as `text/*` and `application/*+json`. */
export function compressibleTypes(patterns: readonly string[]): (contentType: string) => boolean {
  const exact = new Set(patterns.filter((p) => !p.includes('*')));
  const wholeSubtype = patterns.filter((p) => p.endsWith('/*')).map((p) => p.slice(0, -1));
  const suffixes = patterns
    .filter((p) => p.includes('/*+'))
    .map((p) => ({ type: p.slice(0, p.indexOf('/') + 1), suffix: p.slice(p.indexOf('*') + 1) }));
  const memo = new Map<string, boolean>();
  const decide = (contentType: string): boolean => {
    const semicolon = contentType.indexOf(';');
    const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
    if (exact.has(type)) return true;
    if (wholeSubtype.some((prefix) => type.startsWith(prefix))) return true;
    return suffixes.some((s) => type.startsWith(s.type) && type.endsWith(s.suffix));
  };
  return (contentType) => {
    let known = memo.get(contentType);
    if (known === undefined) {
      known = decide(contentType);
      if (memo.size >= MEMO_LIMIT) memo.clear();
      memo.set(contentType, known);
    }
    return known;
  };
}
