/**
 * Reading one resource without pause while it is written elsewhere, and what a staleness bound
 * says of those reads: for each write, no answer older than it arrives more than the bound after.
 */
import { performance } from 'node:perf_hooks';

export interface TimedRead {
  /** performance.now() when the answer arrived (so: no earlier than it was served). */
  at: number;
  /** Which write the answer reflects: 0 before the first, k after the k-th. */
  version: number;
}

/** Calls `read` back to back for `ms`, recording each answer's version and arrival. */
export async function readFor(ms: number, read: () => Promise<number>, into: TimedRead[]): Promise<void> {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const version = await read();
    into.push({ at: performance.now(), version });
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * `writes[k - 1]`: when the k-th write's response arrived. Answers that arrived more than
 * `boundMs` after a write and still show an older version.
 */
export function lateStale(
  reads: readonly TimedRead[],
  writes: readonly number[],
  boundMs: number,
): TimedRead[] {
  return reads.filter((read) => writes.some((at, k) => read.at - at > boundMs && read.version < k + 1));
}

/** The longest any write went unseen: the latest an older answer arrived after it, in ms. */
export function worstStaleness(reads: readonly TimedRead[], writes: readonly number[]): number {
  let worst = 0;
  writes.forEach((at, k) => {
    for (const read of reads) if (read.at > at && read.version < k + 1) worst = Math.max(worst, read.at - at);
  });
  return Math.round(worst);
}
