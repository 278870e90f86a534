/**
 * What a gateway allocates while a row is measured: preloaded into the gateways of the chosen
 * rows when BENCH_HEAP_SAMPLE names a directory, as a plain-JavaScript copy (plain-entry.ts).
 * The bench sends SIGUSR2 as a row's measured load begins, and again as it ends: the first
 * starts V8's sampling heap profiler, the second stops it and writes the profile to
 * DIR/<pid>.<n>.heapprofile, which the bench renames after its row (measure.ts).
 *
 * Objects that the next minor or major collection freed are kept in the profile: a request's
 * objects live for a request, and what the profile is for is what makes the collector work
 * (issue 33: GC was the largest single entry of a cache hit's CPU profile). Each sample stands
 * for the bytes V8 estimates were allocated around it, so a profile's sizes add up to an
 * estimate of everything allocated in the window, not to what was still alive at its end.
 */
import { Session } from 'node:inspector';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** On average one sample per this many bytes allocated: about ten per request. */
const SAMPLING_INTERVAL_BYTES = 2048;

const dir = process.env['BENCH_HEAP_SAMPLE'];
if (dir !== undefined && dir !== '') {
  const session = new Session();
  session.connect();
  let sampling = false;
  let written = 0;
  process.on('SIGUSR2', () => {
    if (!sampling) {
      sampling = true;
      session.post('HeapProfiler.startSampling', {
        samplingInterval: SAMPLING_INTERVAL_BYTES,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      return;
    }
    sampling = false;
    session.post('HeapProfiler.stopSampling', (error, result) => {
      // Written under a temporary name and renamed: the bench waits for the final name.
      const file = join(dir, `${process.pid}.${written++}.heapprofile`);
      writeFileSync(
        `${file}.part`,
        JSON.stringify(error === null ? result.profile : { error: String(error) }),
      );
      renameSync(`${file}.part`, file);
    });
  });
}
