/**
 * A service replica in a process of its own, for the upstream resilience tests: an HTTP
 * server that answers each request with its name after an optional delay, or fails in a way
 * the test chooses, and `/healthz` with 200. Killed with SIGKILL like a crashed replica, and
 * started again on the same port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface ReplicaOptions {
  name: string;
  /** Milliseconds before each answer. */
  delayMs?: number;
  /** `ok` (200 JSON), `reset` (cut the connection after the delay), `503` (with Retry-After when set). */
  mode?: 'ok' | 'reset' | '503';
  retryAfter?: string;
  /** 0 for any free port. */
  port?: number;
}

export interface Replica {
  name: string;
  port: number;
  url: string;
  /** Requests answered or cut, by method, as the replica counted them (read over `/count`). */
  counts(): Promise<Record<string, number>>;
  kill(): Promise<void>;
}

const SCRIPT = `
const http = require('node:http');
const { NAME, DELAY_MS, MODE, RETRY_AFTER, PORT } = process.env;
const counts = {};
const server = http.createServer((req, res) => {
  if (req.url === '/healthz') return res.end('ok');
  if (req.url === '/count') {
    res.setHeader('content-type', 'application/json');
    return res.end(JSON.stringify(counts));
  }
  counts[req.method] = (counts[req.method] || 0) + 1;
  req.resume();
  setTimeout(() => {
    if (MODE === 'reset') return req.socket.destroy();
    if (MODE === '503') {
      if (RETRY_AFTER) res.setHeader('retry-after', RETRY_AFTER);
      res.statusCode = 503;
      return res.end('busy');
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ replica: NAME }));
  }, Number(DELAY_MS || 0));
});
server.keepAliveTimeout = 60000;
server.listen(Number(PORT || 0), '127.0.0.1', () => console.log('listening ' + server.address().port));
`;

export async function startReplica(options: ReplicaOptions): Promise<Replica> {
  const child: ChildProcess = spawn(process.execPath, ['-e', SCRIPT], {
    env: {
      PATH: process.env['PATH'],
      NAME: options.name,
      DELAY_MS: String(options.delayMs ?? 0),
      MODE: options.mode ?? 'ok',
      RETRY_AFTER: options.retryAfter ?? '',
      PORT: String(options.port ?? 0),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`replica ${options.name} did not start`)), 10_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /^listening (\d+)$/.exec(line);
      if (match !== null) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    void exited.then(() => reject(new Error(`replica ${options.name} exited before listening`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    name: options.name,
    port,
    url,
    async counts() {
      const response = await fetch(`${url}/count`);
      return (await response.json()) as Record<string, number>;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}
