/**
 * `npm run -s check -- [FILE]` and `npm run gateway -- --check [FILE]`, like `nginx -t`: the
 * config file and the environment judged without starting anything (no database, Redis,
 * listener or data dir), every problem on one line with its key path and the file's line,
 * exit 0 valid, 1 invalid, 2 a usage error.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand, type CommandResult } from '../../support/run-command.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'portico-check-'));
const dataDir = join(dir, 'data');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ENTRIES = {
  'npm run check': ['scripts/check.ts'],
  'gateway --check': ['gateway/main.ts', '--check'],
} as const;

function check(
  entry: keyof typeof ENTRIES,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<CommandResult> {
  return runCommand(process.execPath, [...ENTRIES[entry], ...args], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'], PORTICO_DATA_DIR: dataDir, ...env },
  });
}

function file(name: string, lines: readonly string[]): string {
  const path = join(dir, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const valid = file('valid.yaml', [
  'routes:',
  '  - { prefix: /v1, upstream: "http://127.0.0.1:9", auth: none }',
]);
const invalid = file('invalid.yaml', [
  'routes:',
  '  - prefix: v1',
  '    upstream: nope',
  'listenr: {}',
  'rateLimits:',
  '  policies:',
  '    - { name: default, key: principal, limit: 5, window: 1 minute }',
]);

describe.each(Object.keys(ENTRIES) as (keyof typeof ENTRIES)[])('%s', (entry) => {
  it('a valid file: exit 0, says so, starts nothing (no data dir)', async () => {
    const result = await check(entry, [valid]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`${valid}: valid`);
    // The route without authentication is legal, worth saying.
    expect(result.stderr).toMatch(/warning: .*route \/v1 has auth: none/);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('an invalid file: every problem on one line with the file, its line and the key path; exit 1', async () => {
    const result = await check(entry, [invalid]);
    expect(result.code).toBe(1);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        `${invalid}:2: routes[0].prefix: must match pattern "^(/|(/[A-Za-z0-9._~-]+)+)$"`,
        `${invalid}:3: routes[0].upstream: must be a URL`,
        `${invalid}:4: listenr: unknown key`,
      ]),
    );
    // A bad window is one line that says what a window is, not three validator lines.
    const window = lines.filter((line) => line.includes('window'));
    expect(window).toEqual([
      `${invalid}:7: rateLimits.policies[0].window: must be a duration (30s, 1m, 2h, 1d) or a whole number of seconds, got "1 minute"`,
    ]);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('a YAML syntax error shows where, with the excerpt', async () => {
    const broken = file('broken.yaml', ['routes:', '  - prefix: /v1', 'upstream http://x', '  foo: [']);
    const result = await check(entry, [broken]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${broken}:3: Implicit keys need to be on a single line`);
    // The excerpt: the offending line, then a caret under it.
    expect(result.stderr).toMatch(/\n {4}upstream http:\/\/x\n {4}\^/);
  });

  it('the environment: each bad variable on a line of its own; exit 1', async () => {
    const result = await check(entry, [valid], {
      GATEWAY_PORT: 'abc',
      ADMIN_PORT: '70000',
      LOG_LEVEL: 'loud',
      GATEWAY_WORKERS: 'many',
    });
    expect(result.code).toBe(1);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        'environment: GATEWAY_PORT must be a port number (0-65535), got "abc"',
        'environment: ADMIN_PORT must be a port number (0-65535), got "70000"',
        'environment: GATEWAY_WORKERS must be a count (1-1024) or "auto", got "many"',
        expect.stringMatching(/^environment: LOG_LEVEL must be one of .*info.*, got "loud"$/),
      ]),
    );
  });

  it('without a file: PORTICO_CONFIG, else the built-in defaults', async () => {
    const fromEnv = await check(entry, [], { PORTICO_CONFIG: invalid });
    expect(fromEnv.code).toBe(1);
    expect(fromEnv.stderr).toContain(`${invalid}:4: listenr: unknown key`);
    const defaults = await check(entry, []);
    expect(defaults.code, defaults.stderr).toBe(0);
    expect(defaults.stdout).toContain('built-in defaults: valid');
  });

  it('usage errors exit 2: an unknown option, two files, a file that cannot be read', async () => {
    for (const args of [['--frob'], [valid, invalid], [join(dir, 'missing.yaml')]]) {
      const result = await check(entry, args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(/^check: /);
    }
  });
});
