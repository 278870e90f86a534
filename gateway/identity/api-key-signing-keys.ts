/**
 * Where the API-key signing keys come from. Production sets `PORTICO_APIKEY_SIGNING_KEYS`
 * (`kid:base64secret[,kid:base64secret...]`): the first key signs new keys, every key
 * verifies. To rotate, add the new key second and roll out, then move it first; keys signed
 * with the old one keep working until it is dropped from the list, which revokes them all.
 * Without the variable, a ring created once in the data dir serves a single-machine start.
 */
import { loadHmacKeyRing, type HmacKey } from '../../shared/data-dir-secrets.ts';

export const API_KEY_SIGNING_KEYS_ENV = 'PORTICO_APIKEY_SIGNING_KEYS';

/** The signing key ring: from the environment, else from (creating if needed) the data dir. */
export function loadApiKeySigningKeys(env: NodeJS.ProcessEnv, dataDir: string): HmacKey[] {
  return loadHmacKeyRing(env, dataDir, {
    variable: API_KEY_SIGNING_KEYS_ENV,
    fileName: 'apikey-signing-keys',
  });
}
