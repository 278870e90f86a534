/**
 * One `npm start` measured from the outside: spawned on a given data dir with every port from
 * the kernel, timed from the spawn to the banner and to the first 200 of a real API call
 * through the gateway (the demo token on GET /v1/orders: TLS, the token, the mutual-TLS hop,
 * the database), with the CPU time and peak memory of its process tree, then stopped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';
import { peakRssMiB, processTree, treeCpuMicros } from '../bench/children.ts';
import { rssMiB } from '../soak/sampler.ts';

export interface StartSample {
  /** ms from the spawn of `npm start` to the banner's first line. */
  bannerMs: number;
  /** ms from the spawn to the first 200 of GET /v1/orders through the gateway. */
  firstAnswerMs: number;
  /** CPU seconds of the process tree (npm and node) up to the first answer. */
  cpuSeconds: number;
  /** Peak resident memory (VmHWM) of the node process, in MiB. */
  peakRssMiB: number;
  /** Resident memory of the node process at the first answer, in MiB. */
  rssMiB: number;
  /** Resident memory of npm at the first answer, in MiB. */
  npmRssMiB: number;
  /** When each step of the start ended, in ms from the command (its `started` log line). */
  reachedMs: Record<string, number>;
}

const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;

interface Banner {
  api: string;
  token: string;
  cacert: string;
  reachedMs: Record<string, number>;
}

/** Resolves with what the banner says once its `curl` line is out; rejects if npm exits. */
function awaitBanner(child: ChildProcess, onBanner: () => void): Promise<Banner> {
  return new Promise((resolve, reject) => {
    const lines: string[] = [];
    const found: { [K in keyof Banner]?: Banner[K] | undefined } = {};
    const timer = setTimeout(
      () => reject(new Error(`no banner in ${READY_TIMEOUT_MS} ms:\n${lines.join('\n')}`)),
      READY_TIMEOUT_MS,
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited ${code}:\n${lines.join('\n')}`));
    });
    child.stderr?.on('data', (chunk: Buffer) => lines.push(chunk.toString()));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (line.startsWith('Portico is running')) onBanner();
      if (line.includes('"msg":"started"'))
        found.reachedMs = (JSON.parse(line) as { reachedMs: Record<string, number> }).reachedMs;
      found.api ??= /^ {2}API +(https:\/\/localhost:\d+\/v1)/.exec(line)?.[1];
      found.token ??= /^export TOKEN=(\S+)/.exec(line)?.[1];
      const curl = /^curl --cacert (\S+) /.exec(line);
      if (curl !== null) found.cacert = curl[1];
      // The log line and the banner are written by different streams: either may come first.
      const { api, token, cacert, reachedMs } = found;
      if (api === undefined || token === undefined || cacert === undefined || reachedMs === undefined) return;
      clearTimeout(timer);
      resolve({ api, token, cacert, reachedMs });
    });
  });
}

async function firstAnswer(banner: Banner): Promise<void> {
  const dispatcher = new Agent({ connect: { ca: readFileSync(banner.cacert, 'utf8') } });
  try {
    const answer = await request(`${banner.api}/orders`, {
      headers: { authorization: `Bearer ${banner.token}` },
      dispatcher,
    });
    await answer.body.text();
    if (answer.statusCode !== 200) throw new Error(`GET /v1/orders answered ${answer.statusCode}`);
  } finally {
    await dispatcher.close();
  }
}

/** SIGTERM to npm (which stops the node under it), then waits for the whole tree to end. */
async function stop(child: ChildProcess, tree: number[]): Promise<void> {
  child.kill('SIGTERM');
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  const alive = () =>
    tree.filter((pid) => {
      try {
        process.kill(pid, 0);
        return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false;
      }
    });
  while (alive().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  for (const pid of alive()) process.kill(pid, 'SIGKILL');
}

/** Runs `npm start` once on `dataDir` with `env`, measures it and stops it. */
export async function measureStart(root: string, env: NodeJS.ProcessEnv): Promise<StartSample> {
  const started = performance.now();
  const child = spawn('npm', ['start'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let bannerMs = Number.NaN;
  let tree: number[] = [];
  try {
    const banner = await awaitBanner(child, () => (bannerMs = performance.now() - started));
    await firstAnswer(banner);
    const firstAnswerMs = performance.now() - started;
    tree = processTree(child.pid!);
    return {
      bannerMs,
      firstAnswerMs,
      cpuSeconds: treeCpuMicros(child.pid!) / 1e6,
      // npm `exec`s node through sh: the tree is npm and node.
      peakRssMiB: peakRssMiB(tree.at(-1)!),
      rssMiB: rssMiB(tree.at(-1)!),
      npmRssMiB: rssMiB(child.pid!),
      reachedMs: banner.reachedMs,
    };
  } finally {
    if (tree.length === 0 && child.pid !== undefined) tree = processTree(child.pid);
    await stop(child, tree);
  }
}
