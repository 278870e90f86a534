/**
 * Reading imports from the sources, for the layout tests: no server, no module loading, only
 * the text of each file, so a test can check an import that would fail to load.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every .ts and .js file under `dir`, at any depth. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js)$/.test(entry.name) ? [path] : [];
  });
}

/** Every relative module specifier of `text`: static imports, re-exports and `import()`. */
export function relativeSpecifiers(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g))
    found.push(match[1] ?? '');
  return found;
}
