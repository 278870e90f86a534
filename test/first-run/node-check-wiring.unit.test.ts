/**
 * The places that must agree on the Node.js minimum, read from the files: engines, every npm
 * script that starts a `.ts` file, and the process entries (shared/node-check.js first).
 * node-check.test.ts runs the check itself, on this Node and on an older one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;

describe('where the minimum is stated', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    engines: { node: string };
    scripts: Record<string, string>;
  };

  it('engines says the same minimum as the check', () => {
    expect(pkg.engines.node).toBe('>=22.19');
  });

  it('every npm script that starts a .ts file preloads the check', () => {
    const starting = Object.entries(pkg.scripts).filter(([, command]) => /\bnode\b[^&]*\.ts\b/.test(command));
    expect(starting.length).toBeGreaterThan(5);
    for (const [name, command] of starting)
      expect(command, name).toMatch(/\bnode --import \.\/shared\/node-check\.js [^&]*\.ts\b/);
  });

  it('the process entries import the check before anything else, for their built output', () => {
    for (const entry of ['gateway/main.ts', 'resource-service/main.ts']) {
      const firstImport = readFileSync(join(ROOT, entry), 'utf8')
        .split('\n')
        .find((line) => line.startsWith('import '));
      expect(firstImport, entry).toBe("import '../shared/node-check.js';");
    }
  });
});
