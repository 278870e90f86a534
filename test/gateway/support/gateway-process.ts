/**
 * The gateway as production runs it: `node gateway/main.ts` in a child process, configured
 * by environment and file, so that tests can send it real signals.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface GatewayProcess {
  child: ChildProcess;
  port: number;
  adminPort: number;
  /** Parsed log lines so far. */
  logs: Record<string, unknown>[];
  waitForLog(message: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
  /** What the process wrote to stderr so far (a crash's stack, a fatal V8 error). */
  stderr(): string;
  /** Kills the process if it still runs (test cleanup). */
  stop(): Promise<void>;
}

const MAIN = new URL('../../../gateway/main.ts', import.meta.url).pathname;

export async function startGatewayProcess(
  config: Record<string, unknown>,
  extraEnv: Record<string, string> = {},
  /** Node options before the entry, such as `--import` of a test preload. */
  nodeArgs: readonly string[] = [],
  /** The entry point: the source's, or a build's (`dist/gateway/main.js`). */
  entry: string = MAIN,
): Promise<GatewayProcess & { configFile: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'portico-gw-'));
  const configFile = join(dir, 'gateway.json');
  writeFileSync(configFile, JSON.stringify(config));
  const child = spawn(process.execPath, [...nodeArgs, entry], {
    env: {
      PATH: process.env['PATH'],
      GATEWAY_PORT: '0',
      ADMIN_PORT: '0',
      PORTICO_CONFIG: configFile,
      PORTICO_DATA_DIR: join(dir, 'data'),
      LOG_LEVEL: 'info',
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  const waiters: { message: string; resolve: (line: Record<string, unknown>) => void }[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout }).on('line', (text) => {
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      line = { msg: text };
    }
    logs.push(line);
    for (const waiter of waiters.splice(0)) {
      if (line['msg'] === waiter.message) waiter.resolve(line);
      else waiters.push(waiter);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const waitForLog = (message: string, timeoutMs = 10_000) => {
    const seen = logs.find((line) => line['msg'] === message);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `no "${message}" log within ${timeoutMs} ms; stderr: ${stderr}; logs: ${JSON.stringify(logs)}`,
            ),
          ),
        timeoutMs,
      );
      waiters.push({
        message,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(
          new Error(`gateway exited before "${message}"; stderr: ${stderr}; logs: ${JSON.stringify(logs)}`),
        );
      });
    });
  };

  let listening: Record<string, unknown>;
  try {
    // Generous: a worker's start (type stripping, keys, TLS) took over 10 s on a shared,
    // loaded 2-core machine; a start that fails still ends this wait when the process exits.
    listening = await waitForLog('gateway listening', 40_000);
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    child,
    configFile,
    port: listening['port'] as number,
    adminPort: listening['adminPort'] as number,
    logs,
    waitForLog,
    exited,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      // The data dir holds the generated assertion key.
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
