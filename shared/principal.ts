/** The verified caller, as the gateway established it and the service receives it. */

export const SCOPES = ['orders:read', 'orders:write', 'payments:write', 'invoices:read', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** Never changed once made: the gateway reuses one per verified credential (identity-assertion.ts). */
export interface Principal {
  /** The token's `sub`, or the API key's id for keys. */
  readonly subject: string;
  /** The customer whose data this caller owns; every query of the service is scoped by it. */
  readonly customerId: string;
  /** Granted scopes: those of the credential that Portico knows (knownScopes); others are dropped. */
  readonly scopes: readonly string[];
  readonly authMethod: 'jwt' | 'apikey';
  /** Id of the API key used, when authMethod is `apikey`. */
  readonly keyId?: string;
  /**
   * What an access token is bound to (its RFC 7800 `cnf`, from the JWT or the introspection
   * answer alike), when it is: the proof of possession a request must then carry is checked
   * against it. Absent for a plain bearer token and for API keys.
   */
  readonly cnf?: TokenConfirmation;
}

/** The confirmation members Portico can check: a DPoP key (RFC 9449 §6), a certificate (RFC 8705 §3.1). */
export interface TokenConfirmation {
  /** JWK SHA-256 thumbprint (RFC 7638) of the DPoP key, base64url. */
  readonly jkt?: string;
  /** SHA-256 thumbprint of the client certificate (DER), base64url. */
  readonly 'x5t#S256'?: string;
}

const KNOWN_SCOPES: ReadonlySet<string> = new Set(SCOPES);

/**
 * The scopes of `scopes` that Portico knows, in their order: an unknown one grants nothing,
 * and kept in the principal it would be shown by /v1/users/me and passed on in the assertion,
 * where a later reader could take it for a grant.
 */
export function knownScopes(scopes: readonly string[]): string[] {
  return scopes.filter((scope) => KNOWN_SCOPES.has(scope));
}

/** `admin` implies every other scope: operators get one scope to grant, not five. */
export function hasScope(principal: Principal, scope: Scope): boolean {
  return principal.scopes.includes(scope) || principal.scopes.includes('admin');
}

export function isAdmin(principal: Principal): boolean {
  return principal.scopes.includes('admin');
}

/** Customer ids come from the identity provider; this is what we accept of them. */
export const CUSTOMER_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$';
const customerIdRegExp = new RegExp(CUSTOMER_ID_PATTERN);

export function isValidCustomerId(value: unknown): value is string {
  return typeof value === 'string' && customerIdRegExp.test(value);
}
