/**
 * The bench's side of BENCH_HEAP_SAMPLE (heap-sampler.ts runs in the gateway): a row's
 * measured load is bracketed by two SIGUSR2, and the profile the gateway writes is renamed
 * after the row and round, with the bytes it says were allocated per answered request.
 * `node measure/heap-summary.ts FILE --requests N` tells where they were allocated. A gateway
 * with GATEWAY_WORKERS gets the signals in its primary, which answers no request: the workers
 * rows' figures are the primary's alone.
 */
import { readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long the bench waits for a gateway to write its profile after the second signal. */
const WRITE_TIMEOUT_MS = 30_000;

interface HeapProfileNode {
  selfSize: number;
  children: HeapProfileNode[];
}

/** The bytes a sampled heap profile estimates were allocated: every node's selfSize. */
function allocatedBytes(head: HeapProfileNode): number {
  let total = head.selfSize;
  for (const child of head.children) total += allocatedBytes(child);
  return total;
}

/** The directory of BENCH_HEAP_SAMPLE, when set. */
export function heapSampleDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dir = env['BENCH_HEAP_SAMPLE'];
  return dir === undefined || dir === '' ? undefined : dir;
}

/**
 * Starts the gateway `pid`'s sampling; the returned function ends it, names the profile `name`
 * (the row and round) and says how much was allocated per request.
 */
export function openHeapWindow(
  dir: string,
  pid: number,
): (name: string, requests: number) => Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  return async (name, requests) => {
    process.kill(pid, 'SIGUSR2');
    const deadline = Date.now() + WRITE_TIMEOUT_MS;
    let written: string | undefined;
    while (written === undefined && Date.now() < deadline) {
      written = readdirSync(dir).find(
        (file) => file.startsWith(`${pid}.`) && file.endsWith('.heapprofile') && !before.has(file),
      );
      if (written === undefined) await sleep(100);
    }
    if (written === undefined) return `heap profile: none written within ${WRITE_TIMEOUT_MS / 1000} s`;
    // `name` holds the row and the round: no two windows share it.
    const target = join(dir, `${name.replace(/[^a-z0-9]+/gi, '-')}.heapprofile`);
    renameSync(join(dir, written), target);
    const profile = JSON.parse(readFileSync(target, 'utf8')) as { head?: HeapProfileNode };
    if (profile.head === undefined) return 'heap profile: the gateway could not take one';
    const perRequest = allocatedBytes(profile.head) / Math.max(1, requests) / 1024;
    return `allocated ${perRequest.toFixed(1)} KiB/req (sampled)`;
  };
}
