/**
 * `npm start` loads its modules through Node's compile cache: its script's preloads turn the
 * cache on before the first module of Portico is read, in the temporary directory.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'portico-compile-cache-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("npm start's node", () => {
  it('runs with the compile cache on, kept in the temporary directory', () => {
    const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const preloads = [...(scripts['start'] ?? '').matchAll(/--import (\S+)/g)].flatMap((match) => [
      '--import',
      match[1]!,
    ]);
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: scratch };
    delete env['NODE_COMPILE_CACHE'];
    delete env['NODE_DISABLE_COMPILE_CACHE'];
    const probe = "process.stdout.write(String(require('node:module').getCompileCacheDir()))";
    const result = spawnSync(process.execPath, [...preloads, '-e', probe], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    });
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(new RegExp(`^${realpathSync(scratch)}/node-compile-cache`));
  });
});
