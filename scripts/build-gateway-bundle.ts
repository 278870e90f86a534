/**
 * A step of `npm run build`: the gateway's entry points as single files, with the packages they
 * import, in place of the compiler's one file per module (`dist/gateway/main.js`, and the
 * workers' orphan watch beside it). Node loads one module instead of about 630 (ours, TypeBox's,
 * OpenTelemetry's, jose's, pino's, prom-client's), which an idle gateway paid for with about
 * 4 MiB more live heap, 13 MiB more resident memory and 150 ms more to start
 * (docs/performance.md, "The gateway as one file").
 *
 * Not minified: names and code stay as written, for stack traces and profiles. What a module
 * loads through `createRequire` (lazily, or a package's inner file) is still loaded from
 * node_modules when it is first used, as before. `selfsigned`, with the certificate libraries it
 * brings, is imported only when a certificate is made (a start with none configured): it stays
 * outside, loaded from node_modules then, and a gateway given its certificate never loads it.
 *
 * Inside a bundle every module's `import.meta.url` is the bundle's, `dist/gateway/main.js`: a
 * file the gateway reads at run time is named from a module of the gateway's own directory
 * (gateway/start-admin.ts names the dashboard's), or from one level below it (shared/'s
 * validator cache names `../validators/`), which resolve alike from there.
 */
import { build, type BuildOptions } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The entry points, named as their compiled files are: `<dir>/gateway/<name>.js`. */
const ENTRIES = {
  main: join(ROOT, 'gateway/main.ts'),
  'worker-orphan-watch': join(ROOT, 'gateway/worker-orphan-watch.ts'),
};

/**
 * Writes the bundles into `<distDir>/gateway/`. `distDir` is laid out as `dist/` is: the bundle
 * looks for `../validators/` and `admin/dashboard/` from there.
 */
export async function bundleGateway(distDir: string): Promise<void> {
  await build({ ...BUNDLE_OPTIONS, entryPoints: ENTRIES, outdir: join(distDir, 'gateway') });
  for (const name of Object.keys(ENTRIES)) assertOneByteSource(join(distDir, 'gateway', `${name}.js`));
}

/** Fails the build when `file` holds a character that makes its source two bytes each (below). */
export function assertOneByteSource(file: string): void {
  const wide = firstNonAsciiCharacter(readFileSync(file, 'utf8'));
  if (wide === undefined) return;
  const codePoint = wide.character.codePointAt(0)!.toString(16).toUpperCase();
  throw new Error(
    `${file}:${wide.line}: "${wide.character}" (U+${codePoint}) makes the whole bundle's source two bytes ` +
      `per character in memory (about 1 MiB more); write it in ASCII where it comes from: ${wide.text.trim()}`,
  );
}

/**
 * The first character of `code` outside printable ASCII (tabs and line ends aside), with its
 * line. Node hands V8 a module's source at one byte per character only when every byte of the
 * file is ASCII; one other character, an arrow or a section sign in a comment, and it decodes
 * the whole file to two bytes per character: the bundle's 1.1 MB of source held 2.2 MB outside
 * the heap (heap snapshots and `process.memoryUsage().external` of an idle gateway). esbuild
 * escapes such characters in strings, but it keeps comments and regular expressions as written.
 */
export function firstNonAsciiCharacter(
  code: string,
): { line: number; character: string; text: string } | undefined {
  const at = code.search(/[^\t\n\r\u0020-\u007e]/u);
  if (at === -1) return undefined;
  const lineStart = code.lastIndexOf('\n', at) + 1;
  const lineEnd = code.indexOf('\n', at);
  return {
    line: code.slice(0, at).split('\n').length,
    character: String.fromCodePoint(code.codePointAt(at)!),
    text: code.slice(lineStart, lineEnd === -1 ? undefined : lineEnd),
  };
}

/** How the gateway is bundled; the bench bundles its ladder's rungs alike (measure/bench/plain-entry.ts). */
export const BUNDLE_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  // The oldest Node the engines field allows.
  target: 'node22.19',
  external: ['selfsigned'],
  // CommonJS packages inside an ES module call `require`; ES modules have none of their own.
  banner: {
    js: "import { createRequire as createRequireOfBundle } from 'node:module'; const require = createRequireOfBundle(import.meta.url);",
  },
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
} satisfies BuildOptions;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await bundleGateway(join(ROOT, 'dist'));
  process.stderr.write('build: the gateway bundled into dist/gateway/main.js\n');
}
