/**
 * Product code (what `npm run build` ships: gateway/, resource-service/, shared/) imports
 * neither the user commands in scripts/ nor the measurement harnesses in measure/: both sit on
 * top of the product, and an import the other way would ship a command or a benchmark inside
 * the gateway. Read from the sources, no server.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { relativeSpecifiers, sourceFiles } from './support/imports.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const PRODUCT = ['gateway', 'resource-service', 'shared'];
const ABOVE_THE_PRODUCT = ['scripts', 'measure'];

describe('product code and the folders above it', () => {
  it('finds the imports it checks (control)', () => {
    const mainImports = relativeSpecifiers(readFileSync(join(ROOT, 'gateway/main.ts'), 'utf8'));
    expect(mainImports).toContain('../shared/node-check.js');
  });

  it('no file of gateway/, resource-service/ or shared/ imports scripts/ or measure/', () => {
    const upward: string[] = [];
    for (const folder of PRODUCT)
      for (const file of sourceFiles(join(ROOT, folder)))
        for (const specifier of relativeSpecifiers(readFileSync(file, 'utf8'))) {
          const target = relative(ROOT, resolve(dirname(file), specifier));
          if (ABOVE_THE_PRODUCT.some((above) => target.startsWith(`${above}/`)))
            upward.push(`${relative(ROOT, file)} -> ${target}`);
        }
    expect(upward).toEqual([]);
  });
});
