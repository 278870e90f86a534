/**
 * The resource service as a real child process (`node resource-service/main.ts`), as
 * production runs it, so that tests can SIGKILL or SIGTERM it. The test signs identity
 * assertions with the key it hands the child in PORTICO_ASSERTION_KEYS.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { AssertionKey } from '../../shared/identity-assertion.ts';
import { call, sleep } from './fault-client.ts';
import { freePort } from '../support/free-port.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const READY_TIMEOUT_MS = 20_000;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServiceChild {
  url: string;
  port: number;
  key: AssertionKey;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  exited: Promise<Exit>;
  /** Sends `signal` and waits for the exit. */
  kill(signal: NodeJS.Signals): Promise<Exit>;
}

export function newAssertionKey(): AssertionKey {
  return { kid: 'child', secret: randomBytes(32) };
}

const running = new Set<ChildProcess>();
// A test file that dies mid-way must not leave a service running.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts the process; `waitReady: false` returns at once (for start-up failures). */
export async function spawnService(options: {
  databaseUrl: string;
  key?: AssertionKey;
  env?: Record<string, string>;
  waitReady?: boolean;
}): Promise<ServiceChild> {
  const key = options.key ?? newAssertionKey();
  const port = await freePort();
  const child = spawn(process.execPath, ['resource-service/main.ts'], {
    cwd: ROOT,
    // Only what the service needs: the test runner's own variables are not its business.
    env: {
      PATH: process.env['PATH'] ?? '',
      TMPDIR: process.env['TMPDIR'] ?? '/tmp',
      DATABASE_URL: options.databaseUrl,
      SERVICE_PORT: String(port),
      SERVICE_HOST: '127.0.0.1',
      PORTICO_ASSERTION_KEYS: `${key.kid}:${key.secret.toString('base64')}`,
      LOG_LEVEL: 'warn',
      // These tests are about drains and crashes, not transport: plain HTTP, asked for explicitly.
      SERVICE_PLAIN_HTTP: 'true',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  const service: ServiceChild = {
    url: `http://127.0.0.1:${port}`,
    port,
    key,
    child,
    output: () => output,
    exited,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  if (options.waitReady !== false) await waitReady(service);
  return service;
}

async function waitReady(service: ServiceChild): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let gone = false;
  void service.exited.then(() => (gone = true));
  while (Date.now() < deadline && !gone) {
    const health = await call(service.url, 'GET', '/healthz', { timeoutMs: 2000 });
    if (health.status === 200) return;
    await sleep(50);
  }
  await service.kill('SIGKILL');
  throw new Error(`the service did not become ready:\n${service.output()}`);
}
