/**
 * The environment table of docs/configuration.md is written from the code's own list
 * (shared/environment-variables.ts, `npm run docs:config`), and the list is the code's: a
 * variable read in code but not listed, or listed but read nowhere, fails here, as does a
 * committed table that differs from the list.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENVIRONMENT_VARIABLES, environmentTable } from '../../../shared/environment-variables.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
/** Where the processes and the operators' commands live; measure/ has its own BENCH_* variables. */
const SOURCES = ['gateway', 'shared', 'resource-service', 'scripts'];
const LIST = 'shared/environment-variables.ts';
/** A name as the code writes one it reads from the environment. */
const VARIABLE = /['"`]((?:GATEWAY|ADMIN|SERVICE|DATABASE|REDIS|PORTICO|LOG|NODE)_[A-Z0-9_]+)['"`]/g;

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return files(path);
    return /\.(ts|js)$/.test(name) && path !== LIST ? [path] : [];
  });
}

function readInCode(): Set<string> {
  const names = new Set<string>();
  for (const file of SOURCES.flatMap(files))
    for (const match of readFileSync(join(ROOT, file), 'utf8').matchAll(VARIABLE)) names.add(match[1] ?? '');
  return names;
}

/** Cell by cell: prettier aligns the columns. */
const cells = (table: string | undefined) =>
  (table ?? '')
    .trim()
    .split('\n')
    .map((row) =>
      row
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim().replace(/^-+$/, '---'))
        .join('|'),
    );

describe('the environment variables', () => {
  it('the list names every variable the code reads, and only those', () => {
    const listed = ENVIRONMENT_VARIABLES.map((variable) => variable.name);
    const read = [...readInCode()];
    expect(
      read.filter((name) => !listed.includes(name)),
      'read in code, not in the list',
    ).toEqual([]);
    expect(
      listed.filter((name) => !read.includes(name)),
      'in the list, read nowhere',
    ).toEqual([]);
    expect(new Set(listed).size).toBe(listed.length);
  });

  it('docs/configuration.md holds the table written from the list', () => {
    const doc = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
    const table = doc.split('<!-- environment:start -->')[1]?.split('<!-- environment:end -->')[0];
    expect(cells(table)).toEqual(cells(environmentTable()));
  });

  it('docs/gateway-config.md keeps no table of its own', () => {
    const doc = readFileSync(join(ROOT, 'docs/gateway-config.md'), 'utf8');
    expect(doc).not.toMatch(/^\| variable /m);
  });
});
