/**
 * Every command-line script (scripts/*.ts, and in measure/ the bench, the soak and the profile
 * and heap summaries) answers `--help` with its usage on stdout and exit 0, refuses what it does
 * not know with exit 2 and the usage on stderr, and refuses unknown scopes instead of
 * minting a credential that silently grants nothing (nothing printed, nothing recorded).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'portico-cli-help-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      {
        cwd: ROOT,
        env: { PATH: process.env['PATH'], HOME: process.env['HOME'], PORTICO_DATA_DIR: dataDir },
        timeout: 30_000,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

// The user commands live in scripts/, the benchmark, the soak and their summaries in measure/.
const MEASUREMENT_TOOLS: readonly string[] = ['bench', 'soak', 'profile-summary', 'heap-summary'];
const script = (name: string, args: readonly string[]) =>
  run(process.execPath, [`${MEASUREMENT_TOOLS.includes(name) ? 'measure' : 'scripts'}/${name}.ts`, ...args]);

// Each refuses before it starts anything (servers, a benchmark, a soak, a file write).
const SCRIPTS = [
  'token',
  'apikey',
  'audit',
  'internal-ca',
  'api-compat',
  'start',
  'bench',
  'soak',
  'profile-summary',
  'heap-summary',
  'config-reference',
  'check',
  'reload',
] as const;

describe('--help', () => {
  it.each(SCRIPTS)('%s prints its usage on stdout and exits 0', async (name) => {
    for (const flag of ['--help', '-h']) {
      const result = await script(name, [flag]);
      expect(result.code, `${name} ${flag}: ${result.stderr}`).toBe(0);
      expect(result.stdout).toMatch(/^usage: /);
      expect(result.stdout.split('\n').length).toBeGreaterThan(3);
      expect(result.stderr).toBe('');
    }
  });

  it('wins over other arguments, even ones that would be refused', async () => {
    const result = await script('token', ['--customer', '!!', '--help']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
  });

  it('reaches the script through npm run -s, as the README writes it', async () => {
    const result = await run('npm', ['run', '-s', 'token', '--', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^usage: npm run -s token/);
  });
});

describe('usage errors', () => {
  it.each(SCRIPTS)('%s refuses an unknown option with exit 2 and the usage on stderr', async (name) => {
    const result = await script(name, ['--no-such-option']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/usage: /);
    expect(result.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
  });
});

describe('unknown scopes', () => {
  it('token refuses them, naming them and the known ones, and prints no token', async () => {
    const result = await script('token', ['--customer', 'cust-1', '--scope', 'orders:read ordres:write']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('unknown scope "ordres:write"');
    expect(result.stderr).toContain('known: orders:read orders:write payments:write invoices:read admin');
  });

  it('apikey create refuses them and records no key', async () => {
    const result = await script('apikey', ['create', '--customer', 'cust-1', '--scope', 'orders:reed']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('unknown scope "orders:reed"');
    expect(existsSync(join(dataDir, 'apikeys.jsonl'))).toBe(false);
  });

  it('known scopes still work', async () => {
    const token = await script('token', ['--customer', 'cust-1', '--scope', 'orders:read invoices:read']);
    expect(token.code).toBe(0);
    expect(token.stdout).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+\n$/);
    const key = await script('apikey', ['create', '--customer', 'cust-1', '--scope', 'orders:read']);
    expect(key.code).toBe(0);
    expect(existsSync(join(dataDir, 'apikeys.jsonl'))).toBe(true);
  });
});
