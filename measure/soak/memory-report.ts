/**
 * Preloaded by the soak into the gateway and the resource service (`node --import <this
 * file> gateway/main.ts`): how each reports its heap without a change to the product and
 * without an inspector. Once a second it writes a MemoryRecord to SOAK_MEMORY_FILE, whole
 * (written aside, then renamed), so the soak never reads half a record.
 *
 * Why not the gateway's `/metrics`: its `nodejs_heap_size_used_bytes` is heap used at the
 * moment of the scrape, which saws between roughly 40 and 150 MB under the soak's load as
 * garbage piles up between collections; a trend of that says nothing. Heap used right after
 * a major (mark-compact) collection is the live data plus little else: the number that grows
 * when something leaks. The service exports no metrics at all.
 *
 * Cost to the process: a gc performance entry per collection and a small synchronous write a
 * second. The timer is unref'd, so it never keeps the process alive nor changes how it stops.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

/** One record of the file, as the soak reads it back (bytes; `at` in ms since the epoch). */
export interface MemoryRecord {
  at: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  /** Major collections since start; a new number means a new `heapAfterMajorGc`. */
  majorGcs: number;
  /** Heap used just after the latest major collection; undefined before the first. */
  heapAfterMajorGc?: number;
}

const file = process.env['SOAK_MEMORY_FILE'];
if (file !== undefined && file !== '') {
  let majorGcs = 0;
  let heapAfterMajorGc: number | undefined;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      // A gc entry's detail carries its kind; PerformanceEntry's type does not say so.
      const { kind } = ((entry as { detail?: unknown }).detail ?? {}) as { kind?: number };
      if (kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue;
      majorGcs++;
      // Read when the entry is delivered, a moment after the collection: close enough.
      heapAfterMajorGc = getHeapStatistics().used_heap_size;
    }
  }).observe({ entryTypes: ['gc'] });

  const write = () => {
    const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
    const record: MemoryRecord = {
      at: Date.now(),
      rss,
      heapUsed,
      heapTotal,
      external,
      majorGcs,
      ...(heapAfterMajorGc === undefined ? {} : { heapAfterMajorGc }),
    };
    try {
      writeFileSync(`${file}.tmp`, JSON.stringify(record));
      renameSync(`${file}.tmp`, file);
    } catch {
      // The soak's data dir is being removed: the process is about to be stopped too.
    }
  };
  write();
  setInterval(write, 1000).unref();
}
