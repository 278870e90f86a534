/**
 * Where a gateway's memory is at its peak: preloaded into every gateway the bench starts when
 * BENCH_MEMORY_SAMPLER names a directory (`BENCH_MEMORY_SAMPLER=DIR npm run bench`), as a
 * plain-JavaScript copy (plain-entry.ts: a .ts preload would load the type stripper into the
 * gateway and measure it too). Every 50 ms it reads VmRSS; at each new high (at most one a half
 * second) it writes DIR/<pid>.json: /proc/self/status's memory fields, smaps_rollup, resident
 * memory by mapping (the node binary, [heap], anonymous) and the anonymous part by kind (threads'
 * malloc arenas, V8's pages, the rest), the threads by name, process.memoryUsage(), V8's heap
 * statistics and heap spaces. It stops at SIGTERM, where the bench's peaks end. The timer is
 * unref'd: it never keeps the process alive.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';

const MiB = 1024 * 1024;
const mib = (bytes: number) => Math.round((bytes / MiB) * 10) / 10;

/** A `kB` field of /proc/self/status in MiB. */
function statusMiB(status: string, field: string): number {
  return Number(new RegExp(`^${field}:\\s*(\\d+) kB$`, 'm').exec(status)?.[1] ?? 0) / 1024;
}

/** Resident MiB by mapping: a file by its name, `[heap]`, `[anon]` and the like. */
export function residentByMapping(smaps: string): Record<string, number> {
  const byName = new Map<string, number>();
  let name = '[anon]';
  for (const line of smaps.split('\n')) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header !== null) {
      const path = header[1] ?? '';
      name = path === '' ? '[anon]' : path.startsWith('/') ? path.slice(path.lastIndexOf('/') + 1) : path;
      continue;
    }
    const rss = /^Rss:\s*(\d+) kB/.exec(line);
    if (rss !== null) byName.set(name, (byName.get(name) ?? 0) + Number(rss[1]) / 1024);
  }
  const sorted = [...byName].filter(([, value]) => value >= 0.25).sort((a, b) => b[1] - a[1]);
  return Object.fromEntries(sorted.map(([key, value]) => [key, Math.round(value * 10) / 10]));
}

/** glibc's HEAP_MAX_SIZE on 64-bit: a thread's malloc arena grows in regions aligned to it. */
const ARENA_ALIGNMENT = 64n << 20n;
/** V8's regular heap pages: 256 KiB regions on a 256 KiB boundary. */
const V8_PAGE = 256n << 10n;

/**
 * Anonymous resident memory by what it most likely is, in MiB: the malloc arenas of threads
 * other than the main one (their regions begin on a 64 MiB boundary; the main arena is
 * `[heap]`), V8's regular pages, and the rest (V8's large objects and code range, thread
 * stacks, malloc's mapped chunks, Node's buffers). Told apart by address and size, as glibc and
 * V8 lay them out: a guide to where a peak went, not an account.
 */
export function anonymousByKind(smaps: string): { threadArenas: number; v8Pages: number; other: number } {
  const kb = { threadArenas: 0, v8Pages: 0, other: 0 };
  let kind: keyof typeof kb | undefined;
  for (const line of smaps.split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header !== null) {
      const start = BigInt(`0x${header[1]}`);
      const size = BigInt(`0x${header[2]}`) - start;
      kind =
        header[3] !== ''
          ? undefined
          : start % ARENA_ALIGNMENT === 0n && size <= ARENA_ALIGNMENT
            ? 'threadArenas'
            : start % V8_PAGE === 0n && size === V8_PAGE
              ? 'v8Pages'
              : 'other';
      continue;
    }
    const rss = /^Rss:\s*(\d+) kB/.exec(line);
    if (rss !== null && kind !== undefined) kb[kind] += Number(rss[1]);
  }
  const round = (value: number) => Math.round((value / 1024) * 10) / 10;
  return { threadArenas: round(kb.threadArenas), v8Pages: round(kb.v8Pages), other: round(kb.other) };
}

/** The process's threads by name, and how many of each (`V8Worker`, `libuv-worker`, ...). */
function threadNames(): Record<string, number> {
  const names: Record<string, number> = {};
  for (const task of readdirSync('/proc/self/task')) {
    const name = readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim();
    names[name] = (names[name] ?? 0) + 1;
  }
  return names;
}

/** The process's memory now, by where it is. */
export function memorySnapshot(): object {
  const status = readFileSync('/proc/self/status', 'utf8');
  const smaps = readFileSync('/proc/self/smaps', 'utf8');
  const heap = getHeapStatistics();
  return {
    status: Object.fromEntries(
      ['VmRSS', 'VmHWM', 'RssAnon', 'RssFile', 'RssShmem'].map((field) => [
        field,
        Math.round(statusMiB(status, field) * 10) / 10,
      ]),
    ),
    threads: Number(/^Threads:\s*(\d+)/m.exec(status)?.[1]),
    memoryUsage: Object.fromEntries(
      Object.entries(process.memoryUsage() as unknown as Record<string, number>).map(([k, v]) => [k, mib(v)]),
    ),
    heap: {
      physical: mib(heap.total_physical_size),
      malloced: mib(heap.malloced_memory),
      peakMalloced: mib(heap.peak_malloced_memory),
      external: mib(heap.external_memory),
    },
    spaces: Object.fromEntries(
      getHeapSpaceStatistics().map((space) => [
        space.space_name,
        {
          size: mib(space.space_size),
          used: mib(space.space_used_size),
          physical: mib(space.physical_space_size),
        },
      ]),
    ),
    rollup: readFileSync('/proc/self/smaps_rollup', 'utf8').split('\n').slice(1).filter(Boolean),
    byMapping: residentByMapping(smaps),
    anonymousByKind: anonymousByKind(smaps),
    threadNames: threadNames(),
  };
}

const dir = process.env['BENCH_MEMORY_SAMPLER'];
if (dir !== undefined && dir !== '') {
  const started = Date.now();
  let highest = 0;
  let written = 0;
  // The bench reads its peaks before it stops the processes: a stop's own high (a gateway's
  // exit watchdog is a thread with an isolate of its own) would hide the peak it reports.
  let stopping = false;
  const onStop = () => {
    stopping = true;
    process.off('SIGTERM', onStop);
    // A process with no handler of its own ends, as SIGTERM's default action would end it.
    if (process.listenerCount('SIGTERM') === 0) process.kill(process.pid, 'SIGTERM');
  };
  process.on('SIGTERM', onStop);
  setInterval(() => {
    if (stopping) return;
    const rss = statusMiB(readFileSync('/proc/self/status', 'utf8'), 'VmRSS');
    if (rss <= highest) return;
    highest = rss;
    if (Date.now() - written < 500) return;
    written = Date.now();
    const record = { argv: process.argv.slice(1), seconds: (written - started) / 1000, ...memorySnapshot() };
    writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify(record, null, 1));
  }, 50).unref();
}
