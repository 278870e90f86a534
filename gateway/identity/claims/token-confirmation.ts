/**
 * The `cnf` member of a verified access token (RFC 7800), read the same way whether the token
 * was a JWT verified here or an opaque token whose introspection answer carried it (RFC 7662
 * §2.2 allows any claim there; RFC 9449 §6.2 and RFC 8705 §3.2 put `cnf` in it). One reader
 * for both kinds, so the binding check downstream never depends on how the token was verified.
 */
import type { TokenConfirmation } from '../../../shared/principal.ts';

/** A thumbprint is a SHA-256 digest in base64url: 43 characters, nothing else. */
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;
const MEMBERS = ['jkt', 'x5t#S256'] as const;

export type ConfirmationRead =
  | { ok: true; cnf: TokenConfirmation | undefined }
  | { ok: false; reason: 'malformed cnf claim' | 'unsupported cnf confirmation method' };

const UNBOUND: ConfirmationRead = Object.freeze({ ok: true, cnf: undefined });

/**
 * No `cnf`: an unbound (bearer) token. A `cnf` naming a DPoP key or a certificate: that
 * binding. Anything else is refused, never taken as unbound: a token bound by a method we
 * cannot check (`jwk`, `kid`, ...) would otherwise work for whoever stole it, which is what the
 * binding was there to prevent.
 */
export function readConfirmation(claims: Readonly<Record<string, unknown>>): ConfirmationRead {
  if (!Object.hasOwn(claims, 'cnf')) return UNBOUND;
  const cnf = claims['cnf'];
  if (typeof cnf !== 'object' || cnf === null || Array.isArray(cnf))
    return { ok: false, reason: 'malformed cnf claim' };
  const confirmation: { jkt?: string; 'x5t#S256'?: string } = {};
  for (const member of MEMBERS) {
    if (!Object.hasOwn(cnf, member)) continue;
    const value = (cnf as Record<string, unknown>)[member];
    if (typeof value !== 'string' || !THUMBPRINT.test(value))
      return { ok: false, reason: 'malformed cnf claim' };
    confirmation[member] = value;
  }
  if (Object.keys(confirmation).length === 0)
    return { ok: false, reason: 'unsupported cnf confirmation method' };
  return { ok: true, cnf: Object.freeze(confirmation) };
}
