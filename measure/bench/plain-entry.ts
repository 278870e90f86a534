/**
 * A measured process's entry as plain JavaScript. Node runs a .ts file by loading its type
 * stripper, which stays resident for the process's whole life (about 17 MiB on an idle
 * gateway, issue 33) and which no production process carries: the gateway as shipped runs the
 * built output. So the ladder's rungs, the peers and the field's Node processes start from a
 * copy of their script with the types stripped, written to dist/bench/, whose imports of
 * product code point at its built output (`npm run build` first, as the bench does) and whose
 * imports of other bench scripts at their own stripped copies. Packages resolve from the
 * checkout's node_modules, as from the source. The ladder's rungs, which measure the gateway
 * stage by stage, are built as the shipped gateway is instead (bundledEntry, below).
 */
import { buildSync } from 'esbuild';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { assertOneByteSource, BUNDLE_OPTIONS } from '../../scripts/build-gateway-bundle.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const OUT = join(ROOT, 'dist/bench');
/** A relative import of a .ts module, static or dynamic: `from './x.ts'`, `import('../y.ts')`. */
const RELATIVE_TS_IMPORT = /((?:from|import)\s*\(?\s*)(['"])(\.{1,2}\/[^'"]+)\.ts\2/g;

/**
 * Copies written by this process. Each is written once: the rungs start one after the other
 * from the same copy, and a copy rewritten while a child reads it would start that child on
 * an empty file (it exits 0 before it listens).
 */
const written = new Map<string, string>();

/** Where the plain copy of a bench script goes, or the built output of a product module. */
function plainTarget(source: string): string {
  const inside = relative(ROOT, source);
  if (inside.startsWith('measure/')) return join(OUT, basename(source).replace(/\.ts$/, '.js'));
  return join(ROOT, 'dist', inside.replace(/\.ts$/, '.js'));
}

/**
 * Writes the plain copy of `script` (a path under the checkout) and of the bench scripts it
 * imports; returns the copy's path, to start with `node` instead of the source.
 */
export function plainEntry(script: string): string {
  const source = resolve(ROOT, script);
  const known = written.get(source);
  if (known !== undefined) return known;
  const target = plainTarget(source);
  written.set(source, target);
  const code = stripTypeScriptTypes(readFileSync(source, 'utf8')).replace(
    RELATIVE_TS_IMPORT,
    (_match, lead: string, quote: string, specifier: string) => {
      const imported = resolve(dirname(source), `${specifier}.ts`);
      const importedTarget = relative(ROOT, imported).startsWith('measure/')
        ? plainEntry(imported)
        : plainTarget(imported);
      return `${lead}${quote}${pathToFileURL(importedTarget).href}${quote}`;
    },
  );
  mkdirSync(OUT, { recursive: true });
  // Whole or not at all: another bench of the same checkout may be starting from it.
  writeFileSync(`${target}.${process.pid}`, code);
  renameSync(`${target}.${process.pid}`, target);
  return target;
}

/**
 * A ladder rung's entry in the form the gateway ships in: one file with the product modules and
 * the packages they import, bundled as `npm run build` bundles the gateway
 * (scripts/build-gateway-bundle.ts), so that a rung's memory is the shipped gateway's and not
 * the compiler's one file per module. Its modules read `import.meta.url` as the shipped
 * gateway's file, `dist/gateway/main.js`, so that a rung finds what the gateway finds from there
 * (its dashboard, the shipped validators). Returns the bundle's path.
 */
export function bundledEntry(script: string): string {
  const source = resolve(ROOT, script);
  const known = written.get(source);
  if (known !== undefined) return known;
  const target = join(OUT, basename(source).replace(/\.ts$/, '.bundle.js'));
  written.set(source, target);
  mkdirSync(OUT, { recursive: true });
  // Whole or not at all, as plainEntry writes: another bench of the checkout may be starting.
  buildSync({
    ...BUNDLE_OPTIONS,
    entryPoints: [source],
    outfile: `${target}.${process.pid}.js`,
    // Beside it, without a comment naming it: measure/profile-summary.ts reads `FILE.map`.
    sourcemap: 'external',
    legalComments: 'none',
    define: { 'import.meta.url': JSON.stringify(pathToFileURL(join(ROOT, 'dist/gateway/main.js')).href) },
  });
  // As the shipped bundle: a rung whose source V8 kept at two bytes would weigh 1 MiB more.
  assertOneByteSource(`${target}.${process.pid}.js`);
  renameSync(`${target}.${process.pid}.js.map`, `${target}.map`);
  renameSync(`${target}.${process.pid}.js`, target);
  return target;
}
