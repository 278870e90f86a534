/**
 * Secrets that a single-machine start keeps in the data dir: created once, never rewritten,
 * readable by the owner only, and refused when they are not (a secret others may read or write,
 * or that another user owns, in a directory others may write, is no secret of ours). Several processes may start together (gateway, service, a CLI);
 * whoever links first wins and everyone reads the winner's file.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeFileSync,
  type Stats,
} from 'node:fs';
import { dirname, join } from 'node:path';

/** A named HMAC key; the first key of a ring signs, every key of it verifies (rotation). */
export interface HmacKey {
  kid: string;
  secret: Buffer;
}

const MIN_SECRET_BYTES = 32;
const KID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** A secret file or directory that is not this user's alone; the message names it and the fix. */
export class SecretNotPrivateError extends Error {
  readonly code = 'ERR_SECRET_NOT_PRIVATE';
  /** The file or directory refused. */
  readonly path: string;
  constructor(path: string, message: string) {
    super(message);
    this.name = 'SecretNotPrivateError';
    this.path = path;
  }
}

/**
 * Refuses a directory that group or others may write: they could put a secret of their own
 * in it (a signing key, an admin token) or swap ours. A directory not there yet passes: it is
 * created 0700.
 */
export function assertPrivateDirectory(dir: string): void {
  if (process.getuid === undefined) return; // No POSIX modes to judge (Windows).
  let mode: number;
  try {
    mode = statSync(dir).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if ((mode & 0o022) !== 0)
    throw new SecretNotPrivateError(
      dir,
      `${dir} is writable by group or others (mode ${octal(mode)}); run chmod 700 ${dir}`,
    );
}

/**
 * Refuses a secret that is not this user's alone: one that others may read has leaked, one
 * that others may write, or that another user owns, may be theirs (a planted key). Judged on
 * the open file, so what is read is what was judged.
 */
function assertPrivateFile(stat: Stats, file: string): void {
  const uid = process.getuid?.();
  if (uid === undefined) return;
  if (stat.uid !== uid)
    throw new SecretNotPrivateError(
      file,
      `${file} is owned by uid ${stat.uid}, not by this user (uid ${uid}); remove it or chown it, then chmod 600 ${file}`,
    );
  if ((stat.mode & 0o077) !== 0)
    throw new SecretNotPrivateError(
      file,
      `${file} is readable or writable by group or others (mode ${octal(stat.mode)}); run chmod 600 ${file}`,
    );
}

function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8)}`;
}

/** The content of `file` once it is judged private; undefined when there is no such file. */
function readPrivateFile(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    assertPrivateFile(fstatSync(fd), file);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * Returns the content of `file`, creating it with `create()` when it does not exist yet.
 * The content is written whole to a private name and then linked into place, so a reader
 * never sees a half-written file and concurrent creators agree on one content. The file and
 * its directory must be this user's alone (assertPrivateDirectory, assertPrivateFile).
 */
export function readOrCreateSecretFile(file: string, create: () => string): string {
  assertPrivateDirectory(dirname(file));
  const existing = readPrivateFile(file);
  if (existing !== undefined) return existing;
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
  const created = readPrivateFile(file);
  if (created === undefined) throw new Error(`${file} disappeared as it was created`);
  return created;
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
