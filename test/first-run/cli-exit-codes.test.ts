/**
 * The command-line tools answer alike: 0 done, 1 not done (a broken chain, an unknown key),
 * 2 a usage or input error, which says why; and `--help` never writes a file.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../support/run-command.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'portico-cli-exit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (command: string, args: readonly string[]) =>
  runCommand(command, args, {
    cwd: ROOT,
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], PORTICO_DATA_DIR: join(dir, 'data') },
    timeoutMs: 60_000,
  });

describe('audit verify', () => {
  it('a file that cannot be read is an input error (2), not tampering (1)', async () => {
    const missing = join(dir, 'no-such-audit.log');
    const result = await run(process.execPath, ['scripts/audit.ts', 'verify', missing]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`audit: cannot read ${missing}: ENOENT\n`);
    expect(result.stdout).toBe('');
  });
});

describe('npm run docs:config -- --help', () => {
  it('prints the usage and writes nothing', async () => {
    const reference = join(ROOT, 'docs', 'gateway-config.md');
    const before = statSync(reference).mtimeMs;
    const result = await run('npm', ['run', '-s', 'docs:config', '--', '--help']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^usage: npm run -s docs:config/);
    expect(statSync(reference).mtimeMs).toBe(before);
  });
});

describe('soak', () => {
  it.each([
    [['--minutes', '0'], '--minutes takes whole minutes from 1 to 1440, got "0"'],
    [['--minutes'], '--minutes needs a value'],
    [['--hours', '2'], 'unknown argument --hours'],
    [['--minutes', '5', 'extra'], 'unexpected argument extra'],
  ])('%j says why its usage is wrong, then the usage; exit 2', async (args, reason) => {
    const result = await run(process.execPath, ['measure/soak.ts', ...args]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(new RegExp(`^soak: ${reason.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n`));
    expect(result.stderr).toContain('usage: npm run soak');
  });
});
