/**
 * The bench's plain copies of its process scripts (measure/bench/plain-entry.ts): imports of
 * product code point at the build, imports of bench scripts at their own copies, and a copy is
 * written once per bench: the rungs start one after the other from the same file, and a copy
 * rewritten while a child reads it started that child on an empty file (it exited 0).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { plainEntry } from '../../measure/bench/plain-entry.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

describe('a bench script as plain JavaScript', () => {
  it('imports product code from the build and bench scripts from their copies, types gone', () => {
    const code = readFileSync(plainEntry('measure/bench/node-floor.ts'), 'utf8');
    expect(code).toContain(`from '${pathToFileURL(`${ROOT}dist/shared/tls-policy.js`).href}'`);
    expect(code).toContain(`from '${pathToFileURL(`${ROOT}dist/bench/static-answer.js`).href}'`);
    expect(code).not.toMatch(/\.ts'/);
  });

  it('writes each copy once, never again while a child may be reading it', () => {
    const copy = plainEntry('measure/bench/http-proxy-peer.ts');
    try {
      // What a child started from the first copy sees must stay as it was.
      writeFileSync(copy, '// started from this copy\n');
      expect(plainEntry('measure/bench/http-proxy-peer.ts')).toBe(copy);
      expect(readFileSync(copy, 'utf8')).toBe('// started from this copy\n');
    } finally {
      // The next bench writes its own copy; none is left altered.
      rmSync(copy, { force: true });
    }
  });
});
