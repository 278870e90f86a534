/**
 * Where the gateway and the service get their shared assertion keys.
 *
 * Production sets `PORTICO_ASSERTION_KEYS` (`kid:base64secret[,kid:base64secret...]`, the
 * first key signs, all verify: add the new key second, roll out, then move it first, then
 * drop the old one). Without it, both processes use a key created once in the data dir, which
 * is what a single-machine `npm start` needs.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AssertionKey } from './identity-assertion.ts';

const MIN_SECRET_BYTES = 32;
const KID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Parses `kid:base64secret,...`; throws with a message that never contains a secret. */
export function parseAssertionKeys(spec: string): AssertionKey[] {
  const keys = spec
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry, index) => {
      const colon = entry.indexOf(':');
      const kid = colon === -1 ? '' : entry.slice(0, colon);
      if (!KID_PATTERN.test(kid)) {
        throw new Error(`PORTICO_ASSERTION_KEYS entry ${index + 1}: expected kid:base64secret`);
      }
      const secret = Buffer.from(entry.slice(colon + 1), 'base64');
      if (secret.length < MIN_SECRET_BYTES) {
        throw new Error(
          `PORTICO_ASSERTION_KEYS key "${kid}": secret must be at least ${MIN_SECRET_BYTES} bytes`,
        );
      }
      return { kid, secret };
    });
  if (keys.length === 0) throw new Error('PORTICO_ASSERTION_KEYS is set but holds no key');
  return keys;
}

/** Loads the key ring from the environment, or from (creating if needed) the data dir. */
export function loadAssertionKeys(env: NodeJS.ProcessEnv, dataDir: string): AssertionKey[] {
  const spec = env['PORTICO_ASSERTION_KEYS'];
  if (spec !== undefined && spec.trim() !== '') return parseAssertionKeys(spec);

  const file = join(dataDir, 'assertion-keys');
  try {
    return parseAssertionKeys(readFileSync(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const created = `dev-${randomBytes(4).toString('hex')}:${randomBytes(32).toString('base64')}\n`;
  // Written whole to a private name, then linked into place: when gateway and service start
  // together one link wins, and the other process never reads a half-written file.
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, created, { mode: 0o600 });
  try {
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(temporary);
  }
  return parseAssertionKeys(readFileSync(file, 'utf8'));
}
