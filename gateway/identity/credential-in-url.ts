/**
 * Credentials in the query string, refused wherever they appear (authenticate.ts says why):
 * the parameter names that carry them in the APIs clients copy from.
 */
const URL_CREDENTIALS = new Set(['access_token', 'api_key', 'apikey', 'key', 'token']);

/** The first credential-bearing query parameter of `url`, by name, case-insensitively. */
export function credentialParameter(url: string): string | undefined {
  const query = url.indexOf('?');
  if (query === -1) return undefined;
  for (const name of new URLSearchParams(url.slice(query + 1)).keys()) {
    if (URL_CREDENTIALS.has(name.toLowerCase())) return name;
  }
  return undefined;
}
