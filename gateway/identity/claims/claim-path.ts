/**
 * Where Portico finds what it needs in an access token whose claims it does not choose: the
 * customer under a claim name of the identity provider's (often a URL, as Auth0 requires) or
 * nested in an object (`ext.customer_id`), and the scopes as RFC 9068's space-separated
 * `scope` or as an `scp` array (Azure AD, Okta).
 */

/** Reads one claim: the whole name first (URLs hold dots), then the name as a dotted path. */
export function claimReader(name: string): (payload: Readonly<Record<string, unknown>>) => unknown {
  const path = name.split('.');
  if (path.length === 1 || path.some((segment) => segment === '')) return (payload) => own(payload, name);
  return (payload) => {
    const whole = own(payload, name);
    if (whole !== undefined) return whole;
    let value: unknown = payload;
    for (const segment of path) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
      value = own(value as Record<string, unknown>, segment);
    }
    return value;
  };
}

/** Own properties only: a claim path must never reach `__proto__` or `constructor`. */
function own(object: Readonly<Record<string, unknown>>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/**
 * The granted scopes: `scope` (a space-separated string, RFC 9068) when present, else `scp`
 * (an array of strings, or a space-separated string). Undefined when the claim is malformed.
 */
export function readScopes(payload: Readonly<Record<string, unknown>>): string[] | undefined {
  const scope = own(payload, 'scope') ?? own(payload, 'scp');
  if (scope === undefined) return [];
  if (typeof scope === 'string') return scope.split(' ').filter((s) => s !== '');
  if (Array.isArray(scope) && scope.every((s): s is string => typeof s === 'string' && !s.includes(' ')))
    return scope.filter((s) => s !== '');
  return undefined;
}
