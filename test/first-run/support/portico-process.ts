/**
 * Runs `npm start` (node scripts/start.ts) as a real process for tests: on a given data dir,
 * with nothing else configured and every port chosen by the kernel, so several can run side
 * by side. Also runs the lock contender script that holds a data dir like a foreign process.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

const ROOT = new URL('../../../', import.meta.url).pathname;
const READY_TIMEOUT_MS = 60_000;

/**
 * The environment of a machine with nothing configured, on `dataDir`, ports from the kernel;
 * `extra` adds what a test configures on purpose (a config file, say).
 */
export function bareEnv(dataDir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    // The run's temporary directory (test/support/global-setup.ts), so nothing outlives it.
    TMPDIR: process.env['TMPDIR'],
    PORTICO_DATA_DIR: dataDir,
    GATEWAY_PORT: '0',
    ADMIN_PORT: '0',
    SERVICE_PORT: '0',
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

export interface RunningPortico {
  child: ChildProcess;
  url: string;
  adminUrl: string;
  token: string;
  cacert: string;
  output: () => string;
}

/** Gathers stdout and stderr; `onLine` sees each stdout line as it comes. */
function collect(child: ChildProcess, onLine: (line: string) => void = () => {}): () => string {
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  if (child.stdout !== null) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      output += `${line}\n`;
      onLine(line);
    });
  }
  return () => output;
}

function spawnStart(dataDir: string, extraEnv: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, ['scripts/start.ts'], {
    cwd: ROOT,
    env: bareEnv(dataDir, extraEnv),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Starts Portico and resolves once it has printed its URLs, token and curl line. */
export async function startPortico(
  dataDir: string,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<RunningPortico> {
  const child = spawnStart(dataDir, extraEnv);
  const found: Record<string, string> = {};
  let output = (): string => '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm start not ready in 60 s:\n${output()}`)),
      READY_TIMEOUT_MS,
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited ${code}:\n${output()}`));
    });
    output = collect(child, (line) => {
      const api = /^ {2}API +(https:\/\/localhost:\d+)\/v1/.exec(line);
      if (api?.[1] !== undefined) found['url'] = api[1];
      const admin = /^ {2}Admin +(http:\/\/127\.0\.0\.1:\d+)\//.exec(line);
      if (admin?.[1] !== undefined) found['adminUrl'] = admin[1];
      if (line.startsWith('export TOKEN=')) found['token'] = line.slice('export TOKEN='.length);
      const curl = /--cacert (\S+)/.exec(line);
      if (curl?.[1] !== undefined) {
        found['cacert'] = curl[1];
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return {
    child,
    url: found['url'] ?? '',
    adminUrl: found['adminUrl'] ?? '',
    token: found['token'] ?? '',
    cacert: found['cacert'] ?? '',
    output,
  };
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  seconds: number;
}

/**
 * Starts Portico expecting it to exit by itself (a refusal). Should it start serving instead,
 * it is killed after `timeoutMs` and reported with a null code, so the test fails on the code.
 */
export async function runStartToExit(dataDir: string, timeoutMs: number): Promise<Finished> {
  const started = performance.now();
  const child = spawnStart(dataDir);
  const output = collect(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (c, s) => resolve([c, s])),
  );
  clearTimeout(timer);
  return { code, signal, output: output(), seconds: (performance.now() - started) / 1000 };
}

/** Sends `signal` and resolves with the exit code (null when killed by the signal). */
export function stopProcess(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill(signal);
  return exited;
}

export interface Contender {
  child: ChildProcess;
  /** Resolves once the contender is loaded and waiting for the go file. */
  ready: Promise<void>;
  /** The contender's verdict: `won`, `in-use <pid>` or `error <message>`. */
  result: Promise<string>;
}

/**
 * Runs test/first-run/support/lock-contender.ts: it waits until `goFile` exists (when given),
 * tries to take the lock of `dataDir` and, having won, holds it until its stdin closes.
 */
export function spawnContender(dataDir: string, goFile?: string): Contender {
  const child = spawn(
    process.execPath,
    ['test/first-run/support/lock-contender.ts', dataDir, ...(goFile === undefined ? [] : [goFile])],
    { cwd: ROOT, env: bareEnv(dataDir), stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const lines: ((line: string) => void)[] = [];
  const next = () => new Promise<string>((resolve) => lines.push(resolve));
  const ready = next().then(() => undefined);
  const verdict = next();
  const output = collect(child, (line) => lines.shift()?.(line));
  const exited = new Promise<never>((_, reject) =>
    // 'close', not 'exit': by then every line it printed has been read.
    child.once('close', (code) => reject(new Error(`contender exited ${code}:\n${output()}`))),
  );
  // Once the verdict is in, a later exit is expected, not an error.
  exited.catch(() => {});
  return { child, ready: Promise.race([ready, exited]), result: Promise.race([verdict, exited]) };
}
