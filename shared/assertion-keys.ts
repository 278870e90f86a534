/**
 * Where the gateway and the service get their shared assertion keys.
 *
 * Production sets `PORTICO_ASSERTION_KEYS` (`kid:base64secret[,kid:base64secret...]`, the
 * first key signs, all verify: add the new key second, roll out, then move it first, then
 * drop the old one). Without it, both processes use a key created once in the data dir, which
 * is what a single-machine `npm start` needs.
 */
import { loadHmacKeyRing, parseHmacKeyRing } from './data-dir-secrets.ts';
import type { AssertionKey } from './identity-assertion.ts';

export const ASSERTION_KEYS_ENV = 'PORTICO_ASSERTION_KEYS';

/** Parses `kid:base64secret,...`; throws with a message that never contains a secret. */
export function parseAssertionKeys(spec: string): AssertionKey[] {
  return parseHmacKeyRing(spec, ASSERTION_KEYS_ENV);
}

/** Loads the key ring from the environment, or from (creating if needed) the data dir. */
export function loadAssertionKeys(env: NodeJS.ProcessEnv, dataDir: string): AssertionKey[] {
  return loadHmacKeyRing(env, dataDir, { variable: ASSERTION_KEYS_ENV, fileName: 'assertion-keys' });
}
