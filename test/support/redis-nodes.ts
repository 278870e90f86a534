/**
 * Redis servers of a test's own, several at once (a cluster, a master with its replica and
 * sentinels): Debian's `redis-server` on free ports, each in a temporary dir, all killed and
 * their dirs removed by `stopAll`, and killed anyway if the test process exits first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port.ts';

export interface RedisNode {
  port: number;
  /** A plain client of this node (no prefix, no cluster redirection), disconnected by stopAll. */
  client(): Redis;
  /** SIGKILL: the node is gone as a crashed machine's would be. */
  kill(): Promise<void>;
  alive(): boolean;
}

/**
 * TLS only (`port 0`, `tls-port`): the servers' certificate and the client certificate they
 * present to each other (replication, cluster bus, sentinels) and accept from clients
 * (`tls-auth-clients yes`), all from one test CA.
 */
export interface RedisNodesTls {
  caFile: string;
  ca: string;
  server: { certFile: string; keyFile: string };
  client: { certFile: string; keyFile: string; cert: string; key: string };
}

/** The config lines of a TLS-only node on `port`. */
function tlsLines(port: number, tls: RedisNodesTls): string[] {
  return [
    'port 0',
    `tls-port ${port}`,
    `tls-cert-file ${tls.server.certFile}`,
    `tls-key-file ${tls.server.keyFile}`,
    `tls-client-cert-file ${tls.client.certFile}`,
    `tls-client-key-file ${tls.client.keyFile}`,
    `tls-ca-cert-file ${tls.caFile}`,
    'tls-auth-clients yes',
    'tls-replication yes',
  ];
}

export interface RedisNodes {
  dir: string;
  /**
   * Starts `redis-server` with a config file of `lines` plus port, dir and no persistence;
   * `password` makes it require one (and a data node use it towards its master).
   */
  start(
    lines: string[] | ((port: number) => string[]),
    options?: { sentinel?: boolean; password?: string },
  ): Promise<RedisNode>;
  stopAll(): Promise<void>;
}

export async function waitForPort(port: number, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = new Socket();
      socket.once('error', () => resolve(false));
      socket.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server did not listen on ${port}`);
}

export function createRedisNodes(label: string, options: { tls?: RedisNodesTls } = {}): RedisNodes {
  const { tls } = options;
  const dir = mkdtempSync(join(tmpdir(), `portico-${label}-`));
  const children = new Set<ChildProcess>();
  const clients: Redis[] = [];
  const onExit = () => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);

  async function start(
    lines: string[] | ((port: number) => string[]),
    options: { sentinel?: boolean; password?: string } = {},
  ): Promise<RedisNode> {
    const { password } = options;
    const auth =
      password === undefined
        ? []
        : options.sentinel === true
          ? [`requirepass ${password}`, `sentinel sentinel-pass ${password}`]
          : [`requirepass ${password}`, `masterauth ${password}`];
    const port = await freePort();
    // Sentinels rewrite their config file: each node has its own, in the shared dir.
    const conf = join(dir, `${port}.conf`);
    writeFileSync(
      conf,
      [
        ...(tls === undefined ? [`port ${port}`] : tlsLines(port, tls)),
        'bind 127.0.0.1',
        `dir ${dir}`,
        'save ""',
        'appendonly no',
        ...auth,
        ...(typeof lines === 'function' ? lines(port) : lines),
      ].join('\n'),
    );
    const args = options.sentinel === true ? [conf, '--sentinel'] : [conf];
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    children.add(child);
    child.once('exit', () => children.delete(child));
    await waitForPort(port);
    return {
      port,
      client() {
        const made = new Redis({
          port,
          host: '127.0.0.1',
          lazyConnect: false,
          maxRetriesPerRequest: 1,
          ...(password === undefined ? {} : { password }),
          ...(tls === undefined ? {} : { tls: { ca: tls.ca, cert: tls.client.cert, key: tls.client.key } }),
        });
        made.on('error', () => {});
        clients.push(made);
        return made;
      },
      async kill() {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      },
      alive: () => child.exitCode === null && child.signalCode === null,
    };
  }

  async function stopAll(): Promise<void> {
    for (const client of clients.splice(0)) client.disconnect();
    await Promise.all(
      [...children].map(
        (child) =>
          new Promise((resolve) => {
            child.once('exit', resolve);
            child.kill('SIGKILL');
          }),
      ),
    );
    process.off('exit', onExit);
    rmSync(dir, { recursive: true, force: true });
  }

  return { dir, start, stopAll };
}
