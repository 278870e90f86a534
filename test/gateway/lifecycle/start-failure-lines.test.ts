/**
 * A start that cannot work says why in one readable line on stderr (what, and what to do),
 * like the config errors do, and exits 1; the log line beside it, for machines, carries no
 * stack trace (LOG_LEVEL=debug adds one). A bad variable is refused before anything starts:
 * `npm start` creates no embedded database for a GATEWAY_PORT that cannot work.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, type CommandResult as Run } from '../../support/run-command.ts';
import { bareEnv, spawnContender } from '../../first-run/support/portico-process.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'portico-start-failure-'));
const shortDirs: string[] = [];
let blocker: Server;
let busyPort: number;

beforeAll(async () => {
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  busyPort = (blocker.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => blocker.close(resolve));
  rmSync(dir, { recursive: true, force: true });
  for (const short of shortDirs) rmSync(short, { recursive: true, force: true });
});

const run = (entry: string, env: NodeJS.ProcessEnv): Promise<Run> =>
  runCommand(process.execPath, [entry], { cwd: ROOT, env, timeoutMs: 60_000 });

/** Exit 1, one line on stderr, and no stack trace anywhere. */
function expectOneLine(result: Run): string {
  expect(result.code, `${result.stderr}\n${result.stdout}`).toBe(1);
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(`${result.stdout}${result.stderr}`).not.toMatch(/\bat .*\.ts:\d+|"stack"/);
  return lines[0] ?? '';
}

const gatewayEnv = (name: string, extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({
  PATH: process.env['PATH'],
  PORTICO_DATA_DIR: join(dir, name),
  GATEWAY_PORT: '0',
  ADMIN_PORT: '0',
  ...extra,
});

describe('the gateway (npm run gateway)', () => {
  it('a busy GATEWAY_PORT: one line naming the port and the variable', async () => {
    const result = await run(
      'gateway/main.ts',
      gatewayEnv('busy-https', { GATEWAY_PORT: String(busyPort), LOG_LEVEL: 'info' }),
    );
    const line = expectOneLine(result);
    expect(line).toMatch(new RegExp(`GATEWAY_PORT ${busyPort}.*already in use`));
  });

  it('a busy ADMIN_PORT: names ADMIN_PORT', async () => {
    const result = await run(
      'gateway/main.ts',
      gatewayEnv('busy-admin', { ADMIN_PORT: String(busyPort), ADMIN_HOST: '127.0.0.1' }),
    );
    expect(expectOneLine(result)).toMatch(new RegExp(`ADMIN_PORT ${busyPort}.*already in use`));
  });

  it('GATEWAY_PORT=abc and LOG_LEVEL=loud: one line naming both', async () => {
    const result = await run(
      'gateway/main.ts',
      gatewayEnv('bad-env', { GATEWAY_PORT: 'abc', LOG_LEVEL: 'loud' }),
    );
    const line = expectOneLine(result);
    expect(line).toContain('GATEWAY_PORT must be a port number (0-65535), got "abc"');
    expect(line).toContain('LOG_LEVEL must be one of');
  });
});

describe('npm start', () => {
  it('GATEWAY_PORT=abc is refused before the embedded database starts', async () => {
    const dataDir = join(dir, 'start-bad-port');
    const result = await run(
      'scripts/start.ts',
      bareEnv(dataDir, { GATEWAY_PORT: 'abc', LOG_LEVEL: 'info' }),
    );
    expect(expectOneLine(result)).toContain('GATEWAY_PORT must be a port number (0-65535), got "abc"');
    expect(existsSync(join(dataDir, 'pgdata'))).toBe(false);
  });

  it('a busy SERVICE_PORT: one line naming SERVICE_PORT', async () => {
    // Short: the embedded database's Unix socket path must fit in 107 bytes.
    const dataDir = mkdtempSync('/tmp/pfs-');
    shortDirs.push(dataDir);
    const result = await run(
      'scripts/start.ts',
      bareEnv(dataDir, { SERVICE_PORT: String(busyPort), LOG_LEVEL: 'info' }),
    );
    expect(expectOneLine(result)).toMatch(new RegExp(`SERVICE_PORT ${busyPort}.*already in use`));
  });

  it('a data dir in use: one line naming the holder', async () => {
    const dataDir = join(dir, 'start-locked');
    const holder = spawnContender(dataDir);
    try {
      expect(await holder.result).toBe('won');
      const result = await run('scripts/start.ts', bareEnv(dataDir, { LOG_LEVEL: 'info' }));
      expect(expectOneLine(result)).toContain(`in use by process ${holder.child.pid}`);
    } finally {
      holder.child.kill('SIGKILL');
    }
  });
});
