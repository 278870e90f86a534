/**
 * A PostgreSQL server of the test's own: initdb into a temporary directory, started on a free
 * port, so a test can stop, kill and restart it without touching the shared server that every
 * other test uses. Teardown leaves neither a process nor a file behind.
 */
import { execFile } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.ts';

const run = promisify(execFile);
const BIN = process.env['PORTICO_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';
const START_ATTEMPTS = 3;

export type StopMode = 'smart' | 'fast' | 'immediate';

export interface PostgresInstance {
  port: number;
  dataDir: string;
  /** Connection URL of `database` (default `postgres`) on this instance. */
  url(database?: string): string;
  /** Starts the server again on the same port and data; waits until it accepts connections. */
  start(): Promise<void>;
  /** `pg_ctl stop -m mode`, waiting until the server is gone. */
  stop(mode?: StopMode): Promise<void>;
  /** Sends `signal` to the postmaster only, as a crash or an OOM kill would. */
  kill(signal?: NodeJS.Signals): void;
  /** Stops whatever still runs, kills any orphaned backend, removes the directory. */
  destroy(): Promise<void>;
}

/** PostgreSQL refuses to run as root: as root, its commands run as the `postgres` user. */
const asRoot = process.getuid?.() === 0;

function pgCommand(binary: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const file = join(BIN, binary);
  return asRoot
    ? run('runuser', ['-u', 'postgres', '--', file, ...args], { timeout: 60_000 })
    : run(file, args, { timeout: 60_000 });
}

function postgresIds(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) throw new Error('running as root needs a `postgres` OS user');
  return { uid: Number(uid), gid: Number(gid) };
}

/** A data directory the server's user may own, under this run's TMPDIR. */
function makeDataDir(): string {
  const parent = tmpdir();
  const dir = mkdtempSync(join(parent, 'pg-'));
  if (asRoot) {
    // The run's TMPDIR is root's 0700 directory: the postgres user needs to pass through it
    // (search permission only, not listing).
    const mode = statSync(parent).mode;
    if ((mode & 0o001) === 0) chmodSync(parent, (mode & 0o7777) | 0o001);
    const { uid, gid } = postgresIds();
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  return dir;
}

/** Processes whose working directory is the data dir: the postmaster and all its children. */
function processesIn(dataDir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) === dataDir) pids.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to inspect.
    }
  }
  return pids;
}

function postmasterPid(dataDir: string): number | undefined {
  try {
    const first = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0];
    return first === undefined || first === '' ? undefined : Number(first);
  } catch {
    return undefined;
  }
}

function readLog(dataDir: string): string {
  try {
    return readFileSync(join(dataDir, 'server.log'), 'utf8');
  } catch {
    return '';
  }
}

async function waitUntil(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Creates and starts a private PostgreSQL 15 instance (about 1 to 2 s). */
export async function startPostgresInstance(): Promise<PostgresInstance> {
  const dataDir = makeDataDir();
  let port = 0;
  const startOn = async (candidate: number) => {
    const options = `-p ${candidate} -k ${dataDir} -c listen_addresses=127.0.0.1 -c max_connections=60`;
    // -l: the server must not inherit pg_ctl's stdout, or execFile would wait for it forever.
    await pgCommand('pg_ctl', [
      '-D',
      dataDir,
      '-o',
      options,
      '-l',
      join(dataDir, 'server.log'),
      '-w',
      '-t',
      '30',
      'start',
    ]);
  };
  const instance: PostgresInstance = {
    get port() {
      return port;
    },
    dataDir,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    start: () => startOn(port),
    async stop(mode = 'fast') {
      await pgCommand('pg_ctl', ['-D', dataDir, '-m', mode, '-w', '-t', '30', 'stop']);
    },
    kill(signal = 'SIGKILL') {
      const pid = postmasterPid(dataDir);
      try {
        if (pid !== undefined) process.kill(pid, signal);
      } catch {
        // A stale postmaster.pid: nothing runs.
      }
    },
    async destroy() {
      if (postmasterPid(dataDir) !== undefined) {
        await pgCommand('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', '-t', '10', 'stop']).catch(
          () => {},
        );
      }
      // A killed postmaster leaves backends that end on their own soon; do not wait for that.
      for (const pid of processesIn(dataDir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      await waitUntil(() => processesIn(dataDir).length === 0, 10_000, 'PostgreSQL processes did not end');
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    await pgCommand('initdb', [
      '-D',
      dataDir,
      '-A',
      'trust',
      '-U',
      'postgres',
      '--no-sync',
      '--no-locale',
      '-E',
      'UTF8',
    ]);
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await startOn(port);
        break;
      } catch (error) {
        // Another process may take the free port between probe and bind.
        if (attempt >= START_ATTEMPTS) throw error;
      }
    }
  } catch (error) {
    const log = readLog(dataDir);
    await instance.destroy();
    throw new Error(`private PostgreSQL did not start: ${(error as Error).message}\n${log}`, {
      cause: error,
    });
  }
  // A test file that dies mid-way must not leave a server running: SIGQUIT is the immediate
  // shutdown, which takes the backends down too. The run's teardown removes the files.
  process.once('exit', () => instance.kill('SIGQUIT'));
  return instance;
}
