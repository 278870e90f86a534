/**
 * The embedded database of `npm start`, from another local user's side. Anyone on the machine
 * can see which loopback ports a process listens on (/proc/net/tcp is world-readable) and
 * speak the PostgreSQL protocol to each; none of them may let a client in without a secret.
 * A Unix socket is guarded by file modes instead, so any socket the process serves must sit in
 * a directory only its owner can enter, even when the data dir itself was left open to others.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startPortico, stopProcess } from './support/portico-process.ts';
import type { RunningPortico } from './support/portico-process.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'portico-embedded-db-'));
let running: RunningPortico | undefined;
afterAll(() => {
  if (running !== undefined && running.child.exitCode === null) running.child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

/** Inodes of the sockets process `pid` holds open. */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let link: string;
    try {
      link = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed while we looked
    }
    const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
    if (inode !== undefined) inodes.add(inode);
  }
  return inodes;
}

/** TCP ports in LISTEN state (0A) held by `pid`, as `ss -ltn` would show any user. */
function listeningTcpPorts(pid: number): number[] {
  const inodes = socketInodes(pid);
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const port = fields[1]?.split(':')[1];
      if (fields[3] === '0A' && port !== undefined && inodes.has(fields[9] ?? ''))
        ports.push(parseInt(port, 16));
    }
  }
  return ports;
}

/** Paths of the Unix sockets `pid` listens on (/proc/net/unix: flag 00010000 is __SO_ACCEPTCON). */
function listeningUnixSockets(pid: number): string[] {
  const inodes = socketInodes(pid);
  const paths: string[] = [];
  for (const line of readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const path = fields[7];
    if (fields[3] === '00010000' && inodes.has(fields[6] ?? '') && path?.startsWith('/')) paths.push(path);
  }
  return paths;
}

/** A PostgreSQL StartupMessage (protocol 3.0) as psql sends it, with no password. */
function startupMessage(): Buffer {
  const params = Buffer.from('user\0postgres\0database\0postgres\0\0');
  const head = Buffer.alloc(8);
  head.writeInt32BE(8 + params.length, 0);
  head.writeInt32BE(196608, 4);
  return Buffer.concat([head, params]);
}

/**
 * What a port answers a password-less PostgreSQL startup: `open` is AuthenticationOk (we are
 * in), `busy` is pglite-socket's refusal while its one connection is taken (in once it frees),
 * `password` asks for a secret, `other` is not PostgreSQL at all.
 */
function probe(port: number): Promise<'open' | 'busy' | 'password' | 'other'> {
  return new Promise((done) => {
    const socket = connect({ host: '127.0.0.1', port });
    let answer = Buffer.alloc(0);
    const finish = () => {
      socket.destroy();
      if (answer.toString('latin1').startsWith('Too many connections')) return done('busy');
      if (answer[0] !== 0x52 || answer.length < 9) return done('other');
      return done(answer.readInt32BE(5) === 0 ? 'open' : 'password');
    };
    socket.setTimeout(2000, finish);
    socket.on('connect', () => socket.write(startupMessage()));
    socket.on('data', (chunk: Buffer) => {
      answer = Buffer.concat([answer, chunk]);
      if (answer.length >= 9) finish();
    });
    socket.on('error', finish);
    socket.on('close', finish);
  });
}

/** Keeps knocking on `port` for 40 s, or until a password-less startup gets in. */
async function probeUntilIn(port: number): Promise<string> {
  const deadline = Date.now() + 40_000;
  let answer = await probe(port);
  while (answer !== 'open' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    answer = await probe(port);
  }
  return answer;
}

const portOf = (url: string) => Number(new URL(url).port);

/** The upstream URLs of the `  Route  /v1 → https://127.0.0.1:8081` lines npm start prints. */
function routeUpstreams(output: string): string[] {
  return [...output.matchAll(/^ {2}Route +\S+ → (\S+)/gm)].map((match) => match[1] ?? '');
}

describe('the embedded database of npm start', () => {
  it('lets no local client in without a secret: no open TCP port, and a socket only its owner can reach', async () => {
    // A data dir left readable by others (a hand-made .portico under umask 022).
    chmodSync(dataDir, 0o755);
    running = await startPortico(dataDir);
    const pid = running.child.pid!;

    // Every TCP port is probed once; a port the start did not announce (gateway, admin, the
    // routes' upstreams) is probed until the service's pooled connection to it has gone idle
    // and closed (30 s), since pglite-socket silently drops a second client while it is taken.
    const ports = listeningTcpPorts(pid);
    const announced = [running.url, running.adminUrl, ...routeUpstreams(running.output())].map(portOf);
    expect(
      announced.every((port) => ports.includes(port)),
      `${announced.join()} in ${ports.join()}`,
    ).toBe(true);
    const answers = await Promise.all(
      ports.map(
        async (port) => `${port}: ${await (announced.includes(port) ? probe(port) : probeUntilIn(port))}`,
      ),
    );
    expect(answers.filter((answer) => /: (open|busy)$/.test(answer))).toEqual([]);
    expect(ports.filter((port) => !announced.includes(port))).toEqual([]);

    const uid = process.getuid?.();
    for (const path of listeningUnixSockets(pid)) {
      // Every socket of the process lives under its own data dir...
      expect(path.startsWith(`${resolve(dataDir)}/`), path).toBe(true);
      // ...in a directory no other user may enter, and is not writable (connectable) by others.
      const dir = statSync(dirname(path));
      expect(dir.uid).toBe(uid);
      expect(dir.mode & 0o077, `${dirname(path)} mode`).toBe(0);
      expect(statSync(path).mode & 0o077, `${path} mode`).toBe(0);
    }

    expect(await stopProcess(running.child, 'SIGINT')).toBe(0);
  }, 120_000);
});
