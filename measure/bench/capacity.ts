/**
 * The capacity model's own figures (docs/performance.md), measured by `npm run bench` once its
 * rounds are over:
 *
 * - Redis commands per request, for each path: MONITOR on the bench's Redis during a short
 *   load, counting only the commands that came over the measured gateway's own connections
 *   (found by their ports with `ss`), so that other processes on the same Redis, the bench's
 *   other gateways included, are not counted.
 * - Memory per client connection: the gateway's resident set before and after `CONNECTIONS`
 *   more TLS keep-alive connections, each having had one answer, are held open.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import { processTree } from './children.ts';
import { runLoad } from './measure.ts';
import type { Running, Settings } from './processes.ts';
import { MAIN_GATEWAY_ROWS } from './row-choice.ts';
import type { Row } from './rows.ts';

/** Extra connections held open for the memory figure: enough to rise above the heap's noise. */
const CONNECTIONS = 400;
const LOAD_SECONDS = 2;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Local ports of the TCP connections the processes `pids` hold to the Redis at `port`. */
function redisClientPorts(pids: readonly number[], redisPort: number): Set<string> {
  const out = execFileSync('ss', ['-tnpH', 'state', 'established', `dport = :${redisPort}`], {
    encoding: 'utf8',
  });
  const ports = new Set<string>();
  for (const line of out.split('\n')) {
    const pid = /pid=(\d+)/.exec(line)?.[1];
    const local = line.trim().split(/\s+/)[2];
    if (pid !== undefined && local !== undefined && pids.includes(Number(pid)))
      ports.add(local.slice(local.lastIndexOf(':') + 1));
  }
  return ports;
}

/**
 * Counts, by command name, what MONITOR shows coming from `ports` until `stop()` is called. A
 * plain socket rather than ioredis, whose monitor mode failed here with "Command queue state
 * error" on the first line it read.
 */
export function monitorRedis(redisUrl: string, ports: Set<string>): Promise<{ stop(): Map<string, number> }> {
  const url = new URL(redisUrl);
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: url.hostname, port: Number(url.port || 6379) });
    const byName = new Map<string, number>();
    let rest = '';
    socket.setEncoding('utf8');
    socket.once('error', reject);
    socket.on('data', (text: string) => {
      const lines = (rest + text).split('\r\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        // +1795742885.162013 [0 127.0.0.1:59846] "evalsha" "..." ...
        const match = /^\+\S+ \[\d+ [^\]]*:(\d+)\] "([^"]+)"/.exec(line);
        if (match === null || !ports.has(match[1]!)) continue;
        const name = match[2]!.toLowerCase();
        byName.set(name, (byName.get(name) ?? 0) + 1);
      }
    });
    socket.once('connect', () => {
      if (url.password !== '') socket.write(`AUTH ${decodeURIComponent(url.password)}\r\n`);
      socket.write('MONITOR\r\n');
      resolve({
        stop() {
          socket.destroy();
          return byName;
        },
      });
    });
  });
}

/** Commands (by name) that the row's gateway sent to Redis per answered request. */
async function redisPerRequest(running: Running, row: Row, redisUrl: string, settings: Settings) {
  const pids = processTree(row.measured.process.pid!);
  const ports = redisClientPorts(pids, Number(new URL(redisUrl).port || 6379));
  const monitor = await monitorRedis(redisUrl, ports);
  try {
    const load = await runLoad(
      running,
      {
        url: row.url,
        connections: settings.connections,
        duration: LOAD_SECONDS,
        headers: row.headers(),
        ...(row.dpop === undefined ? {} : { dpop: row.dpop }),
      },
      row.protocol,
    );
    await sleep(500); // batched calls of the last requests
    const byName = monitor.stop();
    const total = [...byName.values()].reduce((a, b) => a + b, 0);
    const names = [...byName].map(([name, count]) => `${name} ${(count / load.responses).toFixed(3)}`);
    return (
      `${(total / load.responses).toFixed(3)} commands per request (${names.join(', ') || 'none'}) ` +
      `over ${load.responses} requests, ${ports.size} connections to Redis`
    );
  } finally {
    monitor.stop();
  }
}

function rssKiB(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => {
    const kib = /^VmRSS:\s*(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return sum + Number(kib ?? 0);
  }, 0);
}

/** One TLS connection that has had one answer and stays open (keep-alive). */
function openAnswered(url: URL, headers: Record<string, string>, ca: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), ca });
    const lines = Object.entries({ host: url.host, ...headers }).map(
      ([name, value]) => `${name}: ${value}\r\n`,
    );
    socket.once('secureConnect', () => socket.write(`GET ${url.pathname} HTTP/1.1\r\n${lines.join('')}\r\n`));
    let seen = '';
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      if (seen.includes('\r\n\r\n')) resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** The resident set a held-open client connection costs the row's gateway, in KiB. */
async function memoryPerConnection(row: Row, caCert: string): Promise<string> {
  const pids = processTree(row.measured.process.pid!);
  const url = new URL(row.url);
  await sleep(1000);
  const before = rssKiB(pids);
  const sockets: TLSSocket[] = [];
  try {
    // In batches of 50: a burst of 400 handshakes would fill the listen backlog.
    for (let i = 0; i < CONNECTIONS; i += 50)
      sockets.push(
        ...(await Promise.all(Array.from({ length: 50 }, () => openAnswered(url, row.headers(), caCert)))),
      );
    await sleep(1000);
    const open = sockets.filter((socket) => !socket.destroyed).length;
    const after = rssKiB(pids);
    return `${((after - before) / open).toFixed(1)} KiB resident per open TLS connection (${open} held: ${(before / 1024).toFixed(1)} → ${(after / 1024).toFixed(1)} MiB)`;
  } finally {
    for (const socket of sockets) socket.destroy();
  }
}

/** A figure that could not be measured is printed as such: it never costs the run its report. */
const failed = (error: unknown) => `not measured: ${(error as Error).message}`;

/** The capacity figures, one line each, for the rows the bench ran. */
export async function measureCapacity(
  running: Running,
  rows: readonly Row[],
  redisUrl: string,
  settings: Settings,
): Promise<string[]> {
  const lines: string[] = [];
  const paths: [string, string][] = [
    ['ladder 1:', 'pass-through'],
    ['ladder 8:', 'full pipeline, miss (static upstream)'],
    [MAIN_GATEWAY_ROWS.miss, 'full pipeline, miss (service)'],
    [MAIN_GATEWAY_ROWS.hit, 'full pipeline, cache hit'],
    ['ladder 12:', 'DPoP-bound token, a new proof per request'],
  ];
  for (const [prefix, label] of paths) {
    const row = rows.find((each) => each.name.startsWith(prefix));
    if (row === undefined) continue;
    process.stderr.write(`bench: capacity: Redis commands, ${label} ...\n`);
    lines.push(`Redis, ${label}: ${await redisPerRequest(running, row, redisUrl, settings).catch(failed)}`);
  }
  const one = rows.find((each) => each.name.startsWith('gateway, 1 worker'));
  if (one !== undefined) {
    process.stderr.write('bench: capacity: memory per connection ...\n');
    lines.push(`memory, ${one.name}: ${await memoryPerConnection(one, running.caCert).catch(failed)}`);
  }
  return lines;
}
