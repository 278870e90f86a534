/**
 * One round of a bench row as the report reads it (measure/bench/measure.ts): 1000 answers of
 * 200 in 2 s at 200 CPU-ms and a 20 MiB peak, with `changes` over it.
 */
import type { Sample } from '../../../measure/bench/measure.ts';

export function benchSample(changes: Partial<Sample> = {}): Sample {
  return {
    load: { responses: 1000, seconds: 2, p50: 1, p99: 2, statuses: { 200: 1000 }, errors: 0, timeouts: 0 },
    measuredCpuMicros: 200_000,
    serviceCpuMicros: 0,
    busyPercent: 50,
    peakRssMiB: 20,
    checks: [],
    probeStatus: 200,
    cacheStatus: undefined,
    ...changes,
  };
}
