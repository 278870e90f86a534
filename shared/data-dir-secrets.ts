/**
 * Secrets that a single-machine start keeps in the data dir: created once, never rewritten,
 * readable by the owner only. Several processes may start together (gateway, service, a CLI);
 * whoever links first wins and everyone reads the winner's file.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** A named HMAC key; the first key of a ring signs, every key of it verifies (rotation). */
export interface HmacKey {
  kid: string;
  secret: Buffer;
}

const MIN_SECRET_BYTES = 32;
const KID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Returns the content of `file`, creating it with `create()` when it does not exist yet.
 * The content is written whole to a private name and then linked into place, so a reader
 * never sees a half-written file and concurrent creators agree on one content.
 */
export function readOrCreateSecretFile(file: string, create: () => string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temporary, create(), { mode: 0o600 });
  try {
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(temporary);
  }
  return readFileSync(file, 'utf8');
}

/**
 * Parses a key ring written as `kid:base64secret[,kid:base64secret...]`. `source` names the
 * variable or file in error messages, which never contain a secret.
 */
export function parseHmacKeyRing(spec: string, source: string): HmacKey[] {
  const keys = spec
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry, index) => {
      const colon = entry.indexOf(':');
      const kid = colon === -1 ? '' : entry.slice(0, colon);
      if (!KID_PATTERN.test(kid)) throw new Error(`${source} entry ${index + 1}: expected kid:base64secret`);
      const secret = Buffer.from(entry.slice(colon + 1), 'base64');
      if (secret.length < MIN_SECRET_BYTES) {
        throw new Error(`${source} key "${kid}": secret must be at least ${MIN_SECRET_BYTES} bytes`);
      }
      return { kid, secret };
    });
  if (keys.length === 0) throw new Error(`${source} holds no key`);
  const kids = new Set(keys.map((key) => key.kid));
  if (kids.size !== keys.length) throw new Error(`${source}: key ids must be unique`);
  return keys;
}

/** A fresh `dev-xxxxxxxx:base64secret` entry for a ring created in the data dir. */
export function newHmacKeyEntry(): string {
  return `dev-${randomBytes(4).toString('hex')}:${randomBytes(32).toString('base64')}\n`;
}

/**
 * A key ring from the environment variable `variable` when set, else from the data dir's file
 * `fileName`, created once: production sets the variable, a single-machine start needs none.
 */
export function loadHmacKeyRing(
  env: NodeJS.ProcessEnv,
  dataDir: string,
  source: { variable: string; fileName: string },
): HmacKey[] {
  const spec = env[source.variable];
  if (spec !== undefined && spec.trim() !== '') return parseHmacKeyRing(spec, source.variable);
  const file = join(dataDir, source.fileName);
  return parseHmacKeyRing(readOrCreateSecretFile(file, newHmacKeyEntry), file);
}
