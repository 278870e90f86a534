/**
 * The validator cache (shared/validator-cache.ts): a validator compiled once is loaded from its
 * code afterwards, whatever the environment's defaults; what it loads validates exactly as Ajv's
 * own validator does; an entry that is not whole, not made for its schema, or not this user's
 * alone to write is never run.
 */
import { createRequire } from 'node:module';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import type * as AjvModule from 'ajv';
import { ConfigError, loadConfigFile, parseConfig } from '../../gateway/config/load.ts';
import { createGatewayConfigSchema } from '../../gateway/config/schema/gateway.ts';
import { createValidator } from '../../resource-service/model/validate.ts';
import { OrderInput, OrderPatch, PaymentInput } from '../../resource-service/model/schemas.ts';
import { buildValidators } from '../../scripts/build-validators.ts';
import { callsForParameters, fillParameters, parameterize } from '../../shared/schema-parameters.ts';
import {
  compileValidator,
  pruneValidatorCache,
  useShippedValidators,
  useValidatorCache,
  validatorCacheCounts,
  type AjvRecipe,
} from '../../shared/validator-cache.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const require = createRequire(import.meta.url);

interface StandaloneModule {
  default: (ajv: unknown, validate: unknown) => string;
}

let scratch: string;
let cacheDir: string;
beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), 'portico-validators-'));
  cacheDir = join(scratch, 'validators');
  Object.assign(validatorCacheCounts, { shipped: 0, loaded: 0, compiled: 0, ignored: 0 });
});
afterEach(() => {
  useValidatorCache(undefined);
  useShippedValidators(undefined);
  rmSync(scratch, { recursive: true, force: true });
});

const RECIPE: AjvRecipe = { options: { allErrors: true, useDefaults: true }, formats: ['uri'] };
const PERSON = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    homepage: Type.Optional(Type.String({ format: 'uri' })),
    tags: Type.Array(Type.String(), { default: ['new'] }),
  },
  { additionalProperties: false },
);

/** Each entry's files, by extension. */
function entries(): { js: string[]; v8: string[] } {
  const names = readdirSync(cacheDir).sort();
  return {
    js: names.filter((name) => name.endsWith('.js')).map((name) => join(cacheDir, name)),
    v8: names.filter((name) => name.endsWith('.v8')).map((name) => join(cacheDir, name)),
  };
}

/** Validates with a validator from the cache, returning the verdict, the filled data, the errors. */
function verdict(schema: object, data: unknown) {
  const validate = compileValidator(schema, RECIPE);
  const copy = structuredClone(data);
  const valid = validate(copy);
  return { valid, data: copy, errors: validate.errors };
}

describe('the validator cache', () => {
  it('compiles once, then loads the code from its private directory', () => {
    useValidatorCache(cacheDir);
    const first = verdict(PERSON, { name: 'Ada' });
    expect(validatorCacheCounts).toEqual({ shipped: 0, loaded: 0, compiled: 1, ignored: 0 });
    expect(statSync(cacheDir).mode & 0o777).toBe(0o700);
    const { js, v8 } = entries();
    expect(js).toHaveLength(1);
    expect(v8).toHaveLength(1);
    for (const file of [...js, ...v8]) expect(statSync(file).mode & 0o777).toBe(0o600);

    // Another object with the same schema: a later start.
    const second = verdict(structuredClone(PERSON), { name: 'Ada' });
    expect(validatorCacheCounts).toEqual({ shipped: 0, loaded: 1, compiled: 1, ignored: 0 });
    expect(second).toEqual(first);
    expect(second.data).toEqual({ name: 'Ada', tags: ['new'] });
  });

  it('a changed schema is compiled afresh; changed defaults are not a change', () => {
    useValidatorCache(cacheDir);
    verdict(PERSON, {});
    const stricter = Type.Object(
      { ...PERSON.properties, name: Type.String({ minLength: 2 }) },
      { additionalProperties: false },
    );
    expect(verdict(stricter, { name: 'A' }).valid).toBe(false);
    expect(validatorCacheCounts).toEqual({ shipped: 0, loaded: 0, compiled: 2, ignored: 0 });

    const otherDefault = Type.Object(
      { ...PERSON.properties, tags: Type.Array(Type.String(), { default: ['old', 'u\u2028'] }) },
      { additionalProperties: false },
    );
    expect(verdict(otherDefault, { name: 'Ada' }).data).toEqual({ name: 'Ada', tags: ['old', 'u\u2028'] });
    expect(validatorCacheCounts).toEqual({ shipped: 0, loaded: 1, compiled: 2, ignored: 0 });
    // Each validation gets its own copy of a default, as Ajv's literal gives.
    const validate = compileValidator(otherDefault, RECIPE);
    const [a, b]: { name: string; tags?: string[] }[] = [{ name: 'a' }, { name: 'b' }];
    validate(a);
    validate(b);
    expect(a?.tags).toEqual(b?.tags);
    expect(a?.tags).not.toBe(b?.tags);
  });

  it('never runs an entry that was edited, cut short, made for another schema or damaged', () => {
    useValidatorCache(cacheDir);
    verdict(PERSON, {});
    const [file] = entries().js;
    const [v8] = entries().v8;
    const original = readFileSync(file!, 'utf8');
    const otherSchema = Type.Object({ name: Type.String() });
    verdict(otherSchema, {});
    const foreign = entries().js.find((name) => name !== file)!;
    const accepting = original.replace(/return errors === 0;/g, 'return true;');
    expect(accepting).not.toBe(original);
    const damaged = [
      accepting,
      original.slice(0, Math.floor(original.length / 2)),
      readFileSync(foreign, 'utf8'),
      'module.exports = () => true;\n',
      '',
    ];
    for (const text of damaged) {
      writeFileSync(file!, text);
      const before = validatorCacheCounts.compiled;
      expect(verdict(PERSON, { name: '' }).valid).toBe(false);
      expect(validatorCacheCounts.compiled).toBe(before + 1);
      // Compiled again and written back whole: the next one loads.
      const loaded = validatorCacheCounts.loaded;
      expect(verdict(PERSON, { name: '' }).valid).toBe(false);
      expect(validatorCacheCounts.loaded).toBe(loaded + 1);
    }
    expect(validatorCacheCounts.ignored).toBe(damaged.length);

    // V8's compiled form: V8 checks its version and the code's length, not its bytes, so a
    // damaged one must never reach V8; it is made again instead.
    const compiled = readFileSync(v8!);
    const flipped = Buffer.from(compiled);
    flipped[Math.floor(flipped.length / 2)]! ^= 0xff;
    for (const bytes of [compiled.subarray(0, 40), flipped]) {
      writeFileSync(v8!, bytes);
      expect(verdict(PERSON, { name: '' }).valid).toBe(false);
      expect(verdict(PERSON, { name: 'x' }).valid).toBe(true);
      expect(readFileSync(v8!).equals(bytes)).toBe(false);
    }
  });

  it('trusts nothing that others could have written', () => {
    useValidatorCache(cacheDir);
    verdict(PERSON, {});
    const [file] = entries().js;
    const accepting = readFileSync(file!, 'utf8').replace(/return errors === 0;/g, 'return true;');
    // Even whole and made for its schema: a digest is no defence against whoever may write it.
    writeFileSync(file!, accepting);
    chmodSync(file!, 0o666);
    const loadedBefore = validatorCacheCounts.loaded;
    expect(verdict(PERSON, { name: '' }).valid).toBe(false);
    chmodSync(cacheDir, 0o777);
    expect(verdict(PERSON, { name: '' }).valid).toBe(false);
    expect(validatorCacheCounts.loaded).toBe(loadedBefore);
    chmodSync(cacheDir, 0o700);
  });

  it("keeps only what this start used: other versions' entries and writers' leftovers go", () => {
    useValidatorCache(cacheDir);
    verdict(PERSON, {});
    const older = Type.Object({ name: Type.String() });
    verdict(older, {});
    const leftover = join(cacheDir, `${'a'.repeat(64)}.js.4242.0badf00d.tmp`);
    writeFileSync(leftover, 'half of an entry');
    const notOurs = join(cacheDir, 'notes.txt');
    writeFileSync(notOurs, 'kept: not an entry');
    // The next start (an upgrade: only PERSON's schema is still in use) loads PERSON alone.
    useValidatorCache(cacheDir);
    const kept = entries();
    verdict(PERSON, {});
    expect(validatorCacheCounts.loaded).toBe(1);
    expect(pruneValidatorCache()).toBe(3);
    const after = entries();
    expect(after.js).toHaveLength(1);
    expect(after.v8).toHaveLength(1);
    expect(kept.js).toContain(after.js[0]);
    expect(readdirSync(cacheDir)).toContain('notes.txt');
    expect(readdirSync(cacheDir).some((name) => name.endsWith('.tmp'))).toBe(false);
    // What was kept still loads.
    expect(verdict(PERSON, { name: '' }).valid).toBe(false);
    expect(validatorCacheCounts.loaded).toBe(2);
  });

  it('removes nothing from a directory others may write, nor without a cache', () => {
    useValidatorCache(cacheDir);
    verdict(PERSON, {});
    useValidatorCache(cacheDir);
    chmodSync(cacheDir, 0o777);
    expect(pruneValidatorCache()).toBe(0);
    chmodSync(cacheDir, 0o700);
    expect(entries().js).toHaveLength(1);
    useValidatorCache(undefined);
    expect(pruneValidatorCache()).toBe(0);
    expect(entries().js).toHaveLength(1);
  });

  it('generates for the template the code Ajv generates for the schema itself', () => {
    const { Ajv } = require('ajv') as typeof AjvModule;
    const addFormats = require('ajv-formats') as (ajv: InstanceType<typeof Ajv>) => void;
    const standalone = (require('ajv/dist/standalone') as StandaloneModule).default;
    const codeOf = (schema: object) => {
      const ajv = new Ajv({
        allErrors: true,
        useDefaults: true,
        strict: false,
        verbose: true,
        code: { source: true },
      });
      addFormats(ajv);
      return standalone(ajv, ajv.compile(schema));
    };
    const schema = createGatewayConfigSchema({
      SERVICE_PORT: '4321',
      PORTICO_DATA_DIR: '/tmp/a "dir"\u2028',
    });
    const parameters = parameterize(schema);
    expect(parameters?.values.length).toBeGreaterThan(10);
    const template = codeOf(parameters!.template);
    expect(fillParameters(template, parameters!.values)).toBe(codeOf(schema));
    expect(callsForParameters(template, 'f')).not.toMatch(/portico-default/);
  });
});

/** The problems a config gets, or its config (JSON, so that frozen or not does not count). */
function outcome(load: () => { config: unknown; warnings: string[] }): unknown {
  try {
    const { config, warnings } = load();
    return JSON.parse(JSON.stringify({ config, warnings }));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { problems: error.problems };
  }
}

const CONFIGS: unknown[] = [
  {},
  { listener: { port: 'abc', bogus: 1 } },
  { routes: [{ prefix: 'v1', upstream: 'not a url', auth: 'maybe' }] },
  {
    routes: [{ prefix: '/v1', upstream: 'https://127.0.0.1:1' }],
    rateLimits: { policies: [{ name: 'x', window: '1 minute' }] },
  },
  { auth: { jwt: { jwksUrl: 'ftp://x', issuer: 3 } }, cache: { maxOwnerShare: 7 } },
  {
    proxy: { upstreamTls: [{ origin: 'https://a.example', caFile: 'ca.pem' }] },
    tracing: { sampleRatio: 'all' },
  },
  [],
  'text',
];

describe('cached validators validate as compiled ones do', () => {
  it("the gateway's config: defaults, values and every problem alike", () => {
    const deployed = ['deploy/portico.yaml', 'deploy/kubernetes/base/portico.yaml'].map((file) =>
      join(ROOT, file),
    );
    const runAll = () =>
      [0, 1].flatMap((round) => [
        ...CONFIGS.map((input) =>
          outcome(() => parseConfig(input, { env: { SERVICE_PORT: String(4000 + round) } })),
        ),
        ...deployed.map((file) => outcome(() => loadConfigFile(file, { SERVICE_PORT: '9' }))),
      ]);
    const compiled = runAll();
    useValidatorCache(cacheDir);
    const cached = runAll();
    expect(cached).toEqual(compiled);
    // The rest loaded what the first wrote (a config that is no object never reaches the schema).
    const notObjects =
      2 * CONFIGS.filter((input) => typeof input !== 'object' || Array.isArray(input)).length;
    expect(validatorCacheCounts.compiled).toBe(1);
    expect(validatorCacheCounts.loaded).toBe(cached.length - 1 - notObjects);
    expect(JSON.stringify(compiled)).toContain('must be');
  });

  it("the service's bodies: the same 422 field errors", () => {
    const bodies: unknown[] = [
      { items: [{ sku: 'SKU-1', quantity: 2, unit_price: 1250 }], currency: 'EUR' },
      { items: [], currency: 'XXX', id: 'x', total: 3 },
      { items: [{ sku: '', quantity: -1, unit_price: 1.5, extra: true }] },
      { status: 'cancelled', items: 'none' },
      { order_id: 'not-a-uuid', amount: '10' },
      { order_id: '0b6f9c1e-2d4a-4c55-9d1e-6f1f5a7c2b10', amount: 10 },
      null,
      [],
    ];
    const schemas = [OrderInput, OrderPatch, PaymentInput];
    const runAll = () =>
      schemas.flatMap((schema) => {
        const validate = createValidator(schema, ['id', 'total']);
        return bodies.map((body) => {
          try {
            return { accepted: validate(structuredClone(body)) };
          } catch (error) {
            return { refused: JSON.parse(JSON.stringify(error)) as unknown };
          }
        });
      });
    const compiled = runAll();
    useValidatorCache(cacheDir);
    runAll();
    const cached = runAll();
    expect(cached).toEqual(compiled);
    expect(validatorCacheCounts).toEqual({ shipped: 0, loaded: 3, compiled: 3, ignored: 0 });
    expect(JSON.stringify(compiled)).toContain('read-only');
  });
});

describe("the build's shipped validators", () => {
  /** The files of a directory with their contents: what a process may not change. */
  const snapshot = (dir: string) =>
    Object.fromEntries(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name)).toString('hex')]));

  it('every validator both processes make at start is shipped, and loads without compiling', async () => {
    const shipped = join(scratch, 'shipped');
    expect(await buildValidators(shipped)).toBe(4);
    expect(statSync(shipped).mode & 0o777).toBe(0o755);
    for (const name of readdirSync(shipped)) expect(statSync(join(shipped, name)).mode & 0o777).toBe(0o644);
    const before = snapshot(shipped);
    const compiled = CONFIGS.map((input) =>
      outcome(() => parseConfig(input, { env: { SERVICE_PORT: '4000' } })),
    );
    Object.assign(validatorCacheCounts, { shipped: 0, loaded: 0, compiled: 0, ignored: 0 });

    useShippedValidators(shipped);
    // Another environment's defaults: the same entry, its parameters filled with them.
    const loaded = CONFIGS.map((input) =>
      outcome(() => parseConfig(input, { env: { SERVICE_PORT: '4000' } })),
    );
    expect(loaded).toEqual(compiled);
    expect(JSON.stringify(loaded)).toContain('127.0.0.1:4000');
    for (const schema of [OrderInput, OrderPatch, PaymentInput]) createValidator(schema);
    const configs = CONFIGS.filter((input) => typeof input === 'object' && !Array.isArray(input)).length;
    expect(validatorCacheCounts).toEqual({ shipped: configs + 3, loaded: 0, compiled: 0, ignored: 0 });
    // Read only: not even V8's compiled form is written back.
    expect(snapshot(shipped)).toEqual(before);
  });

  it('is looked up before the cache, and nothing else of it is trusted', () => {
    const shipped = join(scratch, 'shipped');
    useValidatorCache(shipped);
    verdict(PERSON, {});
    useValidatorCache(undefined);
    chmodSync(shipped, 0o755);
    const [file] = readdirSync(shipped).filter((name) => name.endsWith('.js'));
    const path = join(shipped, file!);
    chmodSync(path, 0o644);
    const original = readFileSync(path, 'utf8');
    Object.assign(validatorCacheCounts, { shipped: 0, loaded: 0, compiled: 0, ignored: 0 });

    useShippedValidators(shipped);
    useValidatorCache(cacheDir);
    expect(verdict(PERSON, { name: '' }).valid).toBe(false);
    expect(validatorCacheCounts).toEqual({ shipped: 1, loaded: 0, compiled: 0, ignored: 0 });
    expect(existsSync(cacheDir)).toBe(false);

    // Others may write the file or its directory, or it was edited or cut short: compiled instead.
    const accepting = original.replace(/return errors === 0;/g, 'return true;');
    const refused: [string, number, number][] = [
      [original, 0o666, 0o755],
      [original, 0o644, 0o775],
      [accepting, 0o644, 0o755],
      [original.slice(0, original.length / 2), 0o644, 0o755],
    ];
    for (const [text, fileMode, dirMode] of refused) {
      writeFileSync(path, text);
      chmodSync(path, fileMode);
      chmodSync(shipped, dirMode);
      const before = validatorCacheCounts.shipped;
      expect(verdict(PERSON, { name: '' }).valid).toBe(false);
      expect(validatorCacheCounts.shipped).toBe(before);
    }
    chmodSync(shipped, 0o755);
  });
});
