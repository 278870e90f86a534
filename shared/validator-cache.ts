/**
 * Ajv validators kept as code between starts. Compiling the gateway's config schema and the
 * service's body schemas was a fifth of a warm `npm start`'s main thread (docs/performance.md);
 * with a cache directory set (`npm start` sets one in its data dir), a validator is compiled
 * once, written as Ajv's standalone code, and later loaded from that code without loading Ajv's
 * compiler at all.
 *
 * Trust: the cache holds code that this process runs, so it lives only in a directory of this
 * user's that no one else may write (like the data dir's secrets), each entry a file of this
 * user's that no one else may write, named by the digest of everything that made the code (the
 * schema, Ajv's options, the versions of Ajv and ajv-formats) and carrying the digest of its
 * own text. Anything else (a foreign, truncated or edited entry, a directory others may write)
 * is ignored: the validator is compiled as without a cache.
 *
 * Shipped validators: `npm run build` writes the entries of every validator the gateway and the
 * service make at start into the build (`dist/validators/`, scripts/build-validators.ts), so
 * that a production process, whose data dir is new in every container, loads them too instead
 * of compiling: an idle gateway holds about 10 MiB less, and the compile's 0.1 s is gone from
 * its start (docs/performance.md). They are looked up before the cache, read only,
 * and trusted as the build's own JavaScript is: files no one but their owner (this user or
 * root) may write, in such a directory, whole and made for their key. Nothing is ever written
 * there at run time.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  type Stats,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import type * as AjvModule from 'ajv';
import type { Ajv, Options, ValidateFunction } from 'ajv';
import { callsForParameters, parameterize } from './schema-parameters.ts';

const require = createRequire(import.meta.url);

/** ajv/dist/standalone, whose types say its CommonJS export is a namespace. */
interface StandaloneModule {
  default: (ajv: Ajv, validate: ValidateFunction) => string;
}

/** How to make the Ajv that compiles: everything in it is part of the cache key. */
export interface AjvRecipe {
  options: Options;
  /** ajv-formats: all of them (with its formatMinimum… keywords), or these formats alone. */
  formats: 'all' | readonly string[];
  /** Keywords Ajv should accept and ignore (annotations such as `example`). */
  keywords?: readonly string[];
}

/**
 * What the cache did in this process: a start that loaded every validator compiled none.
 * `shipped`: loaded from the build's own entries.
 */
export const validatorCacheCounts = { shipped: 0, loaded: 0, compiled: 0, ignored: 0 };

/** Bump when the entry's layout or the way code is made changes. */
const ENTRY_FORMAT = 'portico-validator 1';
let cacheDir: string | undefined;

/** The keys of the entries this process loaded or wrote since the cache was set: those to keep. */
const usedKeys = new Set<string>();

/** Where validators are kept from now on; undefined compiles them every time (the default). */
export function useValidatorCache(dir: string | undefined): void {
  cacheDir = dir;
  usedKeys.clear();
}

/**
 * The build's entries: `validators/` beside the built `shared/` folder, and so beside
 * `dist/gateway/`, whose one-file gateway runs this module with its own URL
 * (scripts/build-gateway-bundle.ts). A process run from the TypeScript sources has none (its
 * `npm start` has the cache).
 */
let shippedDir: string | undefined = import.meta.url.endsWith('.js')
  ? fileURLToPath(new URL('../validators/', import.meta.url))
  : undefined;

/** Where the build's entries are looked up (tests, and the build step that writes them). */
export function useShippedValidators(dir: string | undefined): void {
  shippedDir = dir;
}

/** An entry's file: its key, then `.js` (the code) or `.v8` (V8's compiled form of it). */
const ENTRY_FILE = /^([0-9a-f]{64})\.(?:js|v8)$/;

/**
 * Removes the entries this process neither loaded nor wrote, and the temporary files of a
 * writer that was killed: otherwise every upgrade that changes a schema leaves its old entries
 * behind (about 0.9 MB for a version of the service's schemas). Called once a start has made
 * every validator it needs; a start of another version compiles its own again. Other files, and
 * a directory others may write, are left alone. Returns how many files went.
 */
export function pruneValidatorCache(): number {
  const dir = cacheDir;
  if (dir === undefined || !privateDirectory(dir)) return 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    // Tidying is never worth failing a start that is already serving.
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const key = ENTRY_FILE.exec(name)?.[1];
    const unused = key === undefined ? name.endsWith('.tmp') : !usedKeys.has(key);
    if (!unused) continue;
    try {
      unlinkSync(join(dir, name));
      removed += 1;
    } catch {
      // Gone already: nothing to keep either way.
    }
  }
  return removed;
}

/**
 * A validator of `schema`: the build's when it ships one, else Ajv's own when there is no
 * cache, else from the cache's code.
 */
export function compileValidator<T>(schema: object, recipe: AjvRecipe): ValidateFunction<T> {
  const dir = cacheDir;
  const parameters = dir === undefined && shippedDir === undefined ? undefined : parameterize(schema);
  if (parameters === undefined) return compiled<T>(ajvFor(recipe, false), schema);
  const key = cacheKey(parameters.template, recipe);
  const shipped =
    shippedDir === undefined ? undefined : loadShipped<T>(entryFiles(shippedDir, key), parameters.values);
  if (shipped !== undefined) {
    validatorCacheCounts.shipped += 1;
    return shipped;
  }
  if (dir === undefined) return compiled<T>(ajvFor(recipe, false), schema);
  const entry = entryFiles(dir, key);
  usedKeys.add(entry.key);
  const code = readEntry(entry);
  if (code !== undefined) {
    const validate = load<T>(entry, code, parameters.values, readCodeCache(entry.v8));
    if (validate !== undefined) {
      validatorCacheCounts.loaded += 1;
      return validate;
    }
  }
  if (code !== undefined || existsAsAnything(entry.js)) validatorCacheCounts.ignored += 1;
  const made = callsForParameters(standaloneCodeOf(parameters.template, recipe), DEFAULT_OF);
  writePrivately(entry.dir, entry.js, header(entry.key, made) + made);
  validatorCacheCounts.compiled += 1;
  // What a later start will load is what runs now, not Ajv's own function.
  const validate = load<T>(entry, made, parameters.values, undefined);
  if (validate === undefined) throw new Error('Ajv generated standalone code that does not load');
  return validate;
}

interface EntryFiles {
  dir: string;
  key: string;
  /** The standalone code, after a header with the key and the code's digest. */
  js: string;
  /** V8's compiled form of it, after its digest: V8 would trust a damaged one and crash. */
  v8: string;
}

function entryFiles(dir: string, key: string): EntryFiles {
  return { dir, key, js: join(dir, `${key}.js`), v8: join(dir, `${key}.v8`) };
}

/** The name the code calls for a default: a fresh copy of its JSON, as Ajv's literal gives. */
const DEFAULT_OF = '__defaultOf';

/**
 * Runs the entry's code (V8's compiled form from `cachedData` when it still fits this V8) and
 * returns its validator; undefined when the code does not load. Without a compiled form that
 * fits, the validator is run once, so that V8 compiles its ~400 KB body, and the form written.
 */
function load<T>(
  entry: EntryFiles,
  code: string,
  values: readonly unknown[],
  cachedData: Buffer | undefined,
  writeCodeCache = true,
): ValidateFunction<T> | undefined {
  const json = values.map((value) => JSON.stringify(value));
  const defaultOf = (index: number): unknown => JSON.parse(json[index] ?? 'null');
  const module = { exports: {} as unknown };
  let script: Script;
  try {
    script = new Script(`(function (require, module, exports, ${DEFAULT_OF}) {\n${code}\n})`, {
      filename: entry.js,
      ...(cachedData === undefined ? {} : { cachedData }),
    });
    (script.runInThisContext() as (...args: unknown[]) => void)(
      runtimeRequire,
      module,
      module.exports,
      defaultOf,
    );
  } catch {
    return undefined;
  }
  if (typeof module.exports !== 'function') return undefined;
  const validate = module.exports as ValidateFunction<T>;
  if (writeCodeCache && (cachedData === undefined || script.cachedDataRejected === true)) {
    validate({});
    validate.errors = null;
    const compiled = script.createCachedData();
    writePrivately(entry.dir, entry.v8, Buffer.concat([digest(compiled), compiled]));
  }
  return validate;
}

function cacheKey(template: object, recipe: AjvRecipe): string {
  const versions = ['ajv', 'ajv-formats'].map(
    (name) => (require(`${name}/package.json`) as { version: string }).version,
  );
  return createHash('sha256')
    .update(JSON.stringify([ENTRY_FORMAT, versions, recipe, template]))
    .digest('hex');
}

const compilers = new WeakMap<AjvRecipe, Map<boolean, Ajv>>();

/** One Ajv per recipe (and source flag): Ajv's own set-up costs more than a small schema. */
function ajvFor(recipe: AjvRecipe, source: boolean): Ajv {
  const made = compilers.get(recipe) ?? new Map<boolean, Ajv>();
  compilers.set(recipe, made);
  const known = made.get(source);
  if (known !== undefined) return known;
  const { Ajv: AjvClass } = require('ajv') as typeof AjvModule;
  const addFormats = require('ajv-formats') as (ajv: Ajv, formats?: string[]) => Ajv;
  const { options } = recipe;
  const ajv = new AjvClass(source ? { ...options, code: { ...options.code, source: true } } : options);
  if (recipe.formats === 'all') addFormats(ajv);
  else addFormats(ajv, [...recipe.formats]);
  for (const keyword of recipe.keywords ?? []) ajv.addKeyword(keyword);
  made.set(source, ajv);
  return ajv;
}

/** Ajv's validator, the schema then forgotten: a reused Ajv would keep one per config reload. */
function compiled<T>(ajv: Ajv, schema: object): ValidateFunction<T> {
  const validate = ajv.compile<T>(schema);
  ajv.removeSchema(schema);
  return validate;
}

function standaloneCodeOf(template: object, recipe: AjvRecipe): string {
  const ajv = ajvFor(recipe, true);
  const standaloneCode = (require('ajv/dist/standalone') as StandaloneModule).default;
  return standaloneCode(ajv, compiled(ajv, template));
}

/** The only modules standalone code asks for: Ajv's and ajv-formats' runtime helpers. */
function runtimeRequire(id: string): unknown {
  if (!id.startsWith('ajv/dist/runtime/') && id !== 'ajv-formats/dist/formats')
    throw new Error(`validator code may not require ${id}`);
  return require(id);
}

/** This user's alone to write: nobody else could have put code there. */
function writableByUsAlone(stat: Stats): boolean {
  const uid = process.getuid?.();
  return (uid === undefined || stat.uid === uid) && (stat.mode & 0o022) === 0;
}

/** Whether `dir` is a directory for which `writable` holds. */
function directoryWritableOnlyBy(dir: string, writable: (stat: Stats) => boolean): boolean {
  try {
    const stat = statSync(dir);
    return stat.isDirectory() && writable(stat);
  } catch {
    return false;
  }
}

const privateDirectory = (dir: string) => directoryWritableOnlyBy(dir, writableByUsAlone);

function existsAsAnything(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch {
    return false;
  }
}

function digest(data: string | Buffer): Buffer {
  return createHash('sha256').update(data).digest();
}

/** The build's validator for `entry`'s key, when it ships one that is whole and guarded. */
function loadShipped<T>(entry: EntryFiles, values: readonly unknown[]): ValidateFunction<T> | undefined {
  const code = readEntry(entry, readGuarded);
  if (code === undefined) return undefined;
  return load<T>(entry, code, values, readCodeCache(entry.v8, readGuarded), false);
}

/**
 * An image's files belong to root and its process to another user: a shipped entry may be
 * root's, written by no one else, or this user's alone.
 */
function writableByRootOrUsAlone(stat: Stats): boolean {
  return writableByUsAlone(stat) || (stat.uid === 0 && (stat.mode & 0o022) === 0);
}

const readGuarded = (dir: string, file: string) => readWritableOnlyBy(dir, file, writableByRootOrUsAlone);

function header(key: string, code: string): string {
  return `// ${ENTRY_FORMAT} ${key} ${digest(code).toString('hex')}\n`;
}

/**
 * The content of `file` when it is a file of ours in a private directory, read through no link
 * (the file judged is the file read); else undefined.
 */
const readPrivately = (dir: string, file: string) => readWritableOnlyBy(dir, file, writableByUsAlone);

/** `file`'s content when `writable` holds for it and for its directory; read through no link. */
function readWritableOnlyBy(
  dir: string,
  file: string,
  writable: (stat: Stats) => boolean,
): Buffer | undefined {
  if (!directoryWritableOnlyBy(dir, writable)) return undefined;
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    return stat.isFile() && writable(stat) ? readFileSync(fd) : undefined;
  } finally {
    closeSync(fd);
  }
}

/** The entry's code when it is private, made for its key and whole; else undefined. */
function readEntry(entry: EntryFiles, read = readPrivately): string | undefined {
  const text = read(entry.dir, entry.js)?.toString('utf8');
  const newline = text?.indexOf('\n') ?? -1;
  if (text === undefined || newline === -1) return undefined;
  const code = text.slice(newline + 1);
  return text.slice(0, newline + 1) === header(entry.key, code) ? code : undefined;
}

/** V8's compiled form when it is private and whole; V8 itself checks that it fits the code. */
function readCodeCache(file: string, read = readPrivately): Buffer | undefined {
  const data = read(dirname(file), file);
  if (data === undefined || data.length <= 32) return undefined;
  const compiled = data.subarray(32);
  return digest(compiled).equals(data.subarray(0, 32)) ? compiled : undefined;
}

/** Written whole under a private name, then renamed: a reader sees the old entry or the new. */
function writePrivately(dir: string, file: string, content: string | Buffer): void {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!privateDirectory(dir)) return;
    writeFileSync(temporary, content, { mode: 0o600, flag: 'wx' });
    renameSync(temporary, file);
  } catch {
    // A cache that cannot be written (a read-only data dir) only costs the next start time.
    try {
      unlinkSync(temporary);
    } catch {
      // Never created.
    }
  }
}
