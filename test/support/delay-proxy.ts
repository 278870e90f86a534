/**
 * A TCP proxy that holds every chunk for a fixed time each way, so that a client on this
 * machine sees the round trip of a distant host (the kernel here has no netem). Chunks keep
 * their order: every one waits the same time, and Node fires timers of one duration in the
 * order they were set. No backpressure: it carries test traffic, not bulk data.
 *
 * It runs in a process of its own: in the test process its timers would fire late whenever
 * the test is busy (a burst of TLS handshakes), and the round trip would be the test's load,
 * not the delay asked for.
 */
import { spawn } from 'node:child_process';
import { createConnection, createServer, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export interface DelayProxy {
  /** Where clients connect: `127.0.0.1:port`. */
  host: string;
  port: number;
  /** Ends the proxy's process, and with it every connection. */
  close(): Promise<void>;
}

/** Writes what `from` reads to `to`, `delayMs` later; the end and errors follow the same way. */
function delayedPipe(from: Socket, to: Socket, delayMs: number): void {
  from.on('data', (chunk) => {
    setTimeout(() => {
      if (!to.destroyed) to.write(chunk);
    }, delayMs);
  });
  from.on('end', () => setTimeout(() => to.end(), delayMs));
  from.on('close', () => setTimeout(() => to.destroy(), delayMs));
  from.on('error', () => {});
}

/** In the proxy's own process: listens on a free port of 127.0.0.1, prints it, forwards. */
function serve(target: { host: string; port: number }, oneWayMs: number): void {
  const server = createServer((client) => {
    const upstream = createConnection(target);
    delayedPipe(client, upstream, oneWayMs);
    delayedPipe(upstream, client, oneWayMs);
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(`${typeof address === 'object' && address !== null ? address.port : 0}\n`);
  });
}

const SELF = fileURLToPath(import.meta.url);
if (process.argv[1] === SELF) {
  const [host, port, oneWayMs] = process.argv.slice(2);
  serve({ host: host!, port: Number(port) }, Number(oneWayMs));
}

/** Starts the proxy's process, forwarding to `target` with `oneWayMs` each way. */
export async function startDelayProxy(
  target: { host: string; port: number },
  oneWayMs: number,
): Promise<DelayProxy> {
  const child = spawn(process.execPath, [SELF, target.host, String(target.port), String(oneWayMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Never left behind, even when the test process dies mid-way.
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (line) => resolve(Number(line)));
    void exited.then(() => reject(new Error('the delay proxy exited before listening')));
  });
  return {
    host: '127.0.0.1',
    port,
    async close() {
      process.off('exit', kill);
      kill();
      await exited;
    },
  };
}
