/**
 * `npm run service` on its own says why a start cannot work in one readable line on stderr
 * (which variable, and what to do), like the gateway (test/gateway/lifecycle/
 * start-failure-lines.test.ts); the log line beside it carries no stack trace unless
 * LOG_LEVEL=debug. A refused variable exits 2, a port it cannot take exits 1.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../support/databases.ts';
import { runCommand, type CommandResult as Run } from '../support/run-command.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'portico-test-service-start-'));
let database: ScratchDatabase;
let blocker: Server;
let busyPort: number;

beforeAll(async () => {
  database = await createScratchDatabase();
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  busyPort = (blocker.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => blocker?.close(resolve));
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

function serviceEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'],
    PORTICO_DATA_DIR: dir,
    DATABASE_URL: database.url,
    SERVICE_HOST: '127.0.0.1',
    SERVICE_PORT: '0',
    SERVICE_PLAIN_HTTP: 'true',
    PORTICO_ASSERTION_KEYS: `start:${randomBytes(32).toString('base64')}`,
    LOG_LEVEL: 'info',
    ...extra,
  };
}

const runServiceProcess = (env: NodeJS.ProcessEnv): Promise<Run> =>
  runCommand(process.execPath, ['resource-service/main.ts'], { cwd: ROOT, env, timeoutMs: 60_000 });

/** The exit code, one line on stderr, and no stack trace anywhere. */
function expectOneLine(result: Run, code: number): string {
  expect(result.code, `${result.stderr}\n${result.stdout}`).toBe(code);
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(`${result.stdout}${result.stderr}`).not.toMatch(/\bat .*\.ts:\d+|"stack"/);
  return lines[0] ?? '';
}

describe('the resource service (npm run service)', () => {
  it('a busy SERVICE_PORT: one line naming the port and the variable, exit 1', async () => {
    const result = await runServiceProcess(serviceEnv({ SERVICE_PORT: String(busyPort) }));
    const line = expectOneLine(result, 1);
    expect(line).toMatch(new RegExp(`^service: SERVICE_PORT ${busyPort}.*already in use`));
  });

  it('LOG_LEVEL=debug adds the stack to the log line, the stderr line stays one', async () => {
    const result = await runServiceProcess(serviceEnv({ SERVICE_PORT: 'abc', LOG_LEVEL: 'debug' }));
    expect(result.code).toBe(2);
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stdout).toMatch(/"stack"/);
  });

  it('SERVICE_PORT=abc: one line naming the variable, exit 2', async () => {
    const result = await runServiceProcess(serviceEnv({ SERVICE_PORT: 'abc' }));
    expect(expectOneLine(result, 2)).toMatch(/^service: .*SERVICE_PORT.*"abc"/);
  });

  it('LOG_LEVEL=loud: one line naming the variable and the levels it takes, exit 2', async () => {
    const result = await runServiceProcess(serviceEnv({ LOG_LEVEL: 'loud' }));
    expect(expectOneLine(result, 2)).toMatch(/^service: LOG_LEVEL must be one of .*debug.*, got "loud"$/);
  });

  it('no DATABASE_URL: one line saying so, exit 2', async () => {
    const result = await runServiceProcess(serviceEnv({ DATABASE_URL: '' }));
    expect(expectOneLine(result, 2)).toMatch(/^service: DATABASE_URL is not set/);
  });
});
