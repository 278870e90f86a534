/**
 * A Redis server of the test's own (the local redis-server binary on a free port), so tests
 * can stop, freeze (SIGSTOP) and restart it without touching the shared one.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { freePort } from './free-port.ts';
import { waitForPort } from './redis-nodes.ts';

export interface OwnRedis {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  freeze(): void;
  thaw(): void;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    if (child !== undefined && child.exitCode === null) return;
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    await waitForPort(port);
  };
  const stop = async () => {
    const current = child;
    child = undefined;
    if (current === undefined || current.exitCode !== null) return;
    current.kill('SIGCONT');
    const exited = new Promise((resolve) => current.once('exit', resolve));
    current.kill('SIGKILL');
    await exited;
  };
  // Never leave a server behind, even when the test file dies mid-way.
  process.once('exit', () => child?.kill('SIGKILL'));
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
  };
}
