/**
 * Every process a test started, found by a mark in its environment: a gateway's workers inherit
 * it, and are found even after their primary is gone (reparented, no longer its children).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** The environment variable that carries the mark. */
export const PROCESS_MARK_VARIABLE = 'PORTICO_TEST_PROCESS_MARK';

/** The pids of live processes whose environment holds `mark` (zombies excluded). */
export function markedPids(mark: string): number[] {
  const entry = `${PROCESS_MARK_VARIABLE}=${mark}\0`;
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
        return state !== 'Z' && readFileSync(`/proc/${pid}/environ`, 'utf8').includes(entry);
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

/** SIGKILL to every marked process (test cleanup: a stopped process dies of it too). */
export function killMarked(mark: string): void {
  for (const pid of markedPids(mark)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

/** Waits until no marked process lives or `timeoutMs` passes; the ms it took, or undefined. */
export async function untilNoneLeft(mark: string, timeoutMs: number): Promise<number | undefined> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    if (markedPids(mark).length === 0) return Date.now() - start;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return markedPids(mark).length === 0 ? Date.now() - start : undefined;
}
