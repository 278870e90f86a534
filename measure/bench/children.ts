/**
 * The bench's child processes: started on a chosen CPU when the machine allows it, measured
 * from /proc (Linux), and all of them killed however the bench ends.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';

/** Where each role runs: `measured` is the process under test, `others` everything else. */
export interface Placement {
  pinned: boolean;
  measured?: number;
  others?: number;
  reason: string;
}

/** CPUs this process may use, from /proc/self/status (`Cpus_allowed_list: 0-1,4`). */
function allowedCpus(): number[] {
  const status = readFileSync('/proc/self/status', 'utf8');
  const list = /^Cpus_allowed_list:\s*(.+)$/m.exec(status)?.[1] ?? '';
  const cpus: number[] = [];
  for (const part of list.split(',')) {
    const [from, to] = part.split('-').map(Number);
    if (from === undefined || Number.isNaN(from)) continue;
    for (let cpu = from; cpu <= (to ?? from); cpu++) cpus.push(cpu);
  }
  return cpus;
}

export function choosePlacement(): Placement {
  if (process.platform !== 'linux') return { pinned: false, reason: 'not Linux: no taskset, unpinned' };
  if (spawnSync('taskset', ['-V']).status !== 0)
    return { pinned: false, reason: 'taskset not found (util-linux): unpinned' };
  const cpus = allowedCpus();
  const [measured, others] = cpus;
  if (measured === undefined || others === undefined || availableParallelism() < 2)
    return { pinned: false, reason: 'fewer than 2 CPUs: unpinned, every process shares the CPU' };
  return {
    pinned: true,
    measured,
    others,
    reason:
      `CPU ${measured}: the process being measured (gateway, http-proxy, or the service in the direct row); ` +
      `CPU ${others}: load generator, bench driver, and the service when it is not measured. ` +
      'PostgreSQL and Redis are system services and are not pinned.',
  };
}

const children = new Set<ChildProcess>();

/** Variables that would point a child at other stores or ports than the ones given to it. */
const ELSEWHERE = ['DATABASE_URL', 'GATEWAY_PORT'];

/**
 * Environment of a child (bench and soak): the caller's, minus anything that would point it
 * elsewhere. Every REDIS_* goes too: the child gets its Redis from `overrides`, and the caller's
 * credentials or TLS settings beside that plain local URL would refuse its start.
 */
export function childEnv(logLevel: string, overrides: Record<string, string>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const name of Object.keys(base))
    if (name.startsWith('PORTICO_') || name.startsWith('REDIS_') || ELSEWHERE.includes(name))
      delete base[name];
  return { ...base, LOG_LEVEL: logLevel, ...overrides };
}

/** Where a child runs (a CPU or a taskset list), its environment, and where its output goes. */
export interface StartOptions {
  cpu: number | string | undefined;
  env?: NodeJS.ProcessEnv;
  logFile?: string;
  captureStdout?: boolean;
}

/**
 * Starts `node args` on `cpu` (when pinned; a taskset list such as `0,1` for several). Without
 * it the child inherits the bench driver's own CPU (bench.ts moves itself aside), not the
 * machine. stdout goes nowhere unless captured: the
 * gateway's and service's request logs are written at their configured level, as in
 * production, but not read back. stderr goes to `logFile` for the post-mortem.
 */
export function startNode(args: string[], options: StartOptions): ChildProcess {
  return startCommand(process.execPath, args, options);
}

/** Starts any program as startNode starts node (nginx, for the field rows). */
export function startCommand(program: string, args: string[], options: StartOptions): ChildProcess {
  const line = [program, ...args];
  const [command, ...rest] =
    options.cpu === undefined ? line : ['taskset', '-c', String(options.cpu), ...line];
  const child = spawn(command!, rest, {
    env: options.env ?? process.env,
    stdio: ['ignore', options.captureStdout === true ? 'pipe' : 'ignore', 'pipe'],
  });
  if (options.logFile !== undefined) child.stderr?.pipe(createWriteStream(options.logFile));
  else child.stderr?.resume();
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Moves every thread of a running process to `cpu` (the service changes role between rows). */
export function moveToCpu(pid: number, cpu: number | undefined): void {
  if (cpu === undefined) return;
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

/** SIGTERM every child still running, SIGKILL what is left after `graceMs`. */
export async function killChildren(graceMs = 3000): Promise<void> {
  const running = [...children].filter((child) => child.exitCode === null && child.signalCode === null);
  await Promise.all(
    running.map(
      (child) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            child.kill('SIGKILL');
            resolve();
          }, graceMs);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

/** Resolves with the child's whole stdout once it exits 0; rejects otherwise. */
export function stdoutOf(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.once('exit', (code, signal) => {
      if (code === 0) resolve(out);
      else reject(new Error(`child exited with ${signal ?? code}`));
    });
  });
}

/** Ports this process handed out: two children are never given the same one. */
const handedOut = new Set<number>();
/** The lowest port handed out: below it sit the well-known services' ports. */
const LOWEST_PORT = 10_000;

/**
 * A TCP port on 127.0.0.1 for a child to listen on, chosen below the kernel's ephemeral range.
 * A port from that range (`listen(0)`) could be taken, between this check and the child's own
 * listen, as the source port of any outgoing connection on the machine, of which the bench's
 * start makes hundreds: a rung then failed with EADDRINUSE and the whole run with it. Below
 * the range only another listener can take it.
 */
export async function freePort(): Promise<number> {
  const below = ephemeralLow();
  for (let attempt = 0; attempt < 1000 && below > LOWEST_PORT; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (below - LOWEST_PORT));
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  return anyFreePort(); // no room below the range: as before
}

/** The first port of the kernel's ephemeral range (Linux's default when unreadable). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

/**
 * Polls `probe` until it returns true, failing early if the process dies. The deadline is long:
 * the ladder starts ten gateways at once on two processors, and with profiling flags
 * (BENCH_GATEWAY_NODE_ARGS=--perf-basic-prof) they took more than 20 s to be ready; on a machine
 * whose load average was 20 (other test runs), more than 90 s.
 */
export async function waitUntil(
  what: string,
  child: ChildProcess,
  probe: () => Promise<boolean>,
  timeoutMs = 300_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${what} exited (${child.signalCode ?? child.exitCode}) before it was ready`);
    if (await probe().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} not ready after ${timeoutMs / 1000} s`);
}

const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU microseconds (user + system, all threads) a process has used since it started. */
export function cpuMicros(pid: number): number {
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat(5), 11 and 12 after the parenthesis.
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS_PER_SECOND;
}

/** Peak resident set (VmHWM) since the process started, in MiB. */
export function peakRssMiB(pid: number): number {
  const kib = /^VmHWM:\s*(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib ?? 0) / 1024;
}

/**
 * The process and its children (a gateway with GATEWAY_WORKERS is a primary and its workers):
 * their CPU and memory are the gateway's.
 */
export function processTree(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(' ')
      .filter(Boolean)
      .map(Number);
  } catch {
    // gone, or a kernel without the children file: the process alone
  }
  return [pid, ...children.flatMap(processTree)];
}

/** cpuMicros summed over a process and its children that are alive now. */
export function treeCpuMicros(pid: number): number {
  return processTree(pid).reduce((sum, each) => sum + cpuMicros(each), 0);
}

/** peakRssMiB summed over a process and its children. */
export function treePeakRssMiB(pid: number): number {
  return processTree(pid).reduce((sum, each) => sum + peakRssMiB(each), 0);
}

/** Busy and total jiffies per CPU (/proc/stat), to show what else ran during a row. */
export function cpuJiffies(): Map<number, { busy: number; total: number }> {
  const result = new Map<number, { busy: number; total: number }>();
  for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
    const match = /^cpu(\d+) (.*)$/.exec(line);
    if (match === null) continue;
    const values = match[2]!.trim().split(/\s+/).map(Number);
    const total = values.reduce((sum, value) => sum + value, 0);
    // Fields 4 and 5 are idle and iowait; guest time is already inside user.
    const idle = (values[3] ?? 0) + (values[4] ?? 0);
    const guest = (values[8] ?? 0) + (values[9] ?? 0);
    result.set(Number(match[1]), { busy: total - guest - idle, total: total - guest });
  }
  return result;
}

/** Percent busy of each CPU between two cpuJiffies() readings: `CPU0 97%, CPU1 100%`. */
export function cpuBusySince(before: Map<number, { busy: number; total: number }>): string {
  const after = cpuJiffies();
  return [...after]
    .map(([cpu, now]) => {
      const then = before.get(cpu) ?? { busy: 0, total: 0 };
      const total = now.total - then.total;
      return `CPU${cpu} ${total > 0 ? Math.round(((now.busy - then.busy) / total) * 100) : 0}%`;
    })
    .join(', ');
}
