/**
 * What verifying a bearer token gives, whichever way it was verified: a JWT checked here
 * (jwt-verifier.ts) or an opaque token's introspection answer (introspection/). Both verifiers
 * return this, so the authenticator treats the two kinds alike.
 */
import type { Principal } from '../../../shared/principal.ts';

export type TokenResult =
  | { ok: true; principal: Principal; cacheHit: boolean }
  | { ok: false; kind: 'invalid' | 'unavailable'; reason: string };
