/**
 * Which header fields a stored response keeps (RFC 9111 section 3.1), which a 304 may update
 * (3.2); how a request's Vary fields are compared (4.1) is rules/vary-values.ts.
 */

/** Header fields never stored: per-request, per-hop, or ours to strip. */
const NOT_STORED = new Set([
  'portico-invalidates',
  'x-request-id',
  'set-cookie-2',
  'connection',
  'keep-alive',
]);
/** 3.2: fields a 304 may not change: they describe the stored body, or this one exchange. */
export const NOT_UPDATED = new Set([
  ...NOT_STORED,
  'content-length',
  'content-encoding',
  'content-range',
  'transfer-encoding',
]);

export function storedHeaders(
  headers: Record<string, string | string[]>,
  omitted: readonly string[],
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers))
    if (!NOT_STORED.has(name) && name !== 'cache-status' && !omitted.includes(name)) out[name] = value;
  return out;
}

export function validatorView(headers: Record<string, string | string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['etag', 'last-modified']) {
    const value = headers[name];
    if (value !== undefined) out[name] = Array.isArray(value) ? (value[0] ?? '') : value;
  }
  return out;
}
