/**
 * One data dir, one owner: the process that serves from a data dir (embedded database, audit
 * log) holds `<dataDir>/portico.lock`, and any other process that would open the same files
 * refuses to start, naming the holder. A lock left behind by a killed process is taken over.
 *
 * Why this is race-free without kernel locks (Node has no flock):
 * - Taking a free lock is `link(private file, portico.lock)`: atomic and exclusive (EEXIST),
 *   and the lock appears with its whole content, so a reader never sees half a record.
 * - Removing a stale lock is the dangerous step: two processes that both judged the same dead
 *   holder stale must not both remove "the" lock, since the second removal would hit the first
 *   one's new, live lock. So removal happens only while holding a claim, `portico.lock.reap`,
 *   itself taken by the same exclusive link, and under the claim the lock is read again and
 *   removed only if what is there now is stale. Nobody else can remove it between that read
 *   and the unlink: a live owner only removes its own lock, and a reaper needs the claim.
 * - A claim left by a reaper killed inside that window is stale in turn and is reaped the same
 *   way, under `portico.lock.reap.reap`, and so on: each level is guarded by the next.
 * Holders are judged by facts, never by age: pid alive (kill 0), and the same process start
 * time and boot id from /proc, so a reused pid does not keep a dead holder's lock alive.
 */
import { linkSync, mkdirSync, readFileSync, realpathSync, unlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** The lock file's name inside the data dir. */
export const LOCK_FILE_NAME = 'portico.lock';

/** What a lock file says about the process that holds it. */
export interface LockHolder {
  pid: number;
  hostname: string;
  /** ISO 8601 time at which the holder took the lock. */
  startedAt: string;
  /** What the holder is, e.g. `npm start`. */
  purpose: string;
  /** Start time of the process (clock ticks since boot, /proc/<pid>/stat), where known. */
  procStart: string | null;
  /** /proc/sys/kernel/random/boot_id, where known: a pid from another boot is not this one. */
  bootId: string | null;
}

/** Thrown when another live process holds the data dir; `holder` says who. */
export class DataDirInUseError extends Error {
  readonly code = 'ERR_DATA_DIR_IN_USE';
  readonly dataDir: string;
  readonly lockFile: string;
  readonly holder: LockHolder;

  constructor(dataDir: string, lockFile: string, holder: LockHolder) {
    const host = holder.hostname === hostname() ? '' : ` on host ${holder.hostname}`;
    const remedy =
      host === ''
        ? 'stop it or use another PORTICO_DATA_DIR'
        : `stop it or use another PORTICO_DATA_DIR (if that host no longer runs it, remove ${lockFile})`;
    super(
      `data dir ${dataDir} is in use by process ${holder.pid}${host} ` +
        `(${holder.purpose}, since ${holder.startedAt}); ${remedy}`,
    );
    this.name = 'DataDirInUseError';
    this.dataDir = dataDir;
    this.lockFile = lockFile;
    this.holder = holder;
  }
}

/** A hold on a data dir; `release()` gives up this hold (the lock goes with the last one). */
export interface DataDirLock {
  readonly lockFile: string;
  release(): void;
}

interface Held {
  file: string;
  holds: number;
}

// On globalThis so that two copies of this module in one process (sources and built output)
// still agree that the process holds the lock.
const REGISTRY_KEY = Symbol.for('portico.dataDirLocks');
const globals = globalThis as Record<symbol, Map<string, Held> | undefined>;
const registry = (globals[REGISTRY_KEY] ??= new Map<string, Held>());

const MAX_ATTEMPTS = 200;
const RETRY_MS = 10;

function readProcFile(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** Field 22 of /proc/<pid>/stat; the command name before it may hold spaces and parentheses. */
function processStartTime(pid: number): string | null {
  const stat = readProcFile(`/proc/${pid}/stat`);
  if (stat === null) return null;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19] ?? null;
}

const bootId = readProcFile('/proc/sys/kernel/random/boot_id')?.trim() ?? null;
const ownStart = processStartTime(process.pid);

function ownRecord(purpose: string): LockHolder {
  return {
    pid: process.pid,
    hostname: hostname(),
    startedAt: new Date().toISOString(),
    purpose,
    procStart: ownStart,
    bootId,
  };
}

type HolderState = 'self' | 'alive' | 'unverifiable' | 'dead';

/** Judges a holder by facts only. Another host's process cannot be checked from here. */
function holderState(holder: LockHolder): HolderState {
  if (holder.hostname !== hostname()) return 'unverifiable';
  if (holder.bootId !== null && bootId !== null && holder.bootId !== bootId) return 'dead';
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: the pid exists but belongs to another user, so it is alive.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return 'dead';
  }
  const start = holder.pid === process.pid ? ownStart : processStartTime(holder.pid);
  if (holder.procStart !== null && start !== null && holder.procStart !== start) return 'dead';
  return holder.pid === process.pid ? 'self' : 'alive';
}

function isHolder(value: unknown): value is LockHolder {
  const record = value as Partial<LockHolder> | null;
  return (
    typeof record === 'object' &&
    record !== null &&
    Number.isSafeInteger(record.pid) &&
    typeof record.hostname === 'string' &&
    typeof record.startedAt === 'string' &&
    typeof record.purpose === 'string'
  );
}

/**
 * The record in `file`: undefined when there is no file; null when it cannot be read as one
 * (a lock is only ever linked in whole, so no live holder leaves such a file: it is stale).
 */
function readHolder(file: string): LockHolder | null | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (!isHolder(parsed)) return null;
    return { ...parsed, procStart: parsed.procStart ?? null, bootId: parsed.bootId ?? null };
  } catch {
    return null;
  }
}

/** Creates `file` holding `record`, whole and only if absent; false if it already exists. */
function createExclusive(file: string, record: LockHolder): boolean {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  try {
    linkSync(temporary, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    unlinkSync(temporary);
  }
}

/**
 * Removes `file` if, read under the claim `<file>.reap`, its holder is dead. Returns without
 * removing anything when another live process is reaping: the caller tries again.
 */
function reapIfStale(file: string, depth = 0): void {
  // Each level exists only if a reaper died in a window of microseconds; this many in a row
  // means something else is wrong (e.g. a file system without hard links).
  if (depth > 8) throw new Error(`cannot recover the stale lock ${file}: too many abandoned claims`);
  const claim = `${file}.reap`;
  if (!createExclusive(claim, ownRecord('reaping a stale lock'))) {
    const reaper = readHolder(claim);
    if (reaper === null || (reaper !== undefined && holderState(reaper) === 'dead')) {
      reapIfStale(claim, depth + 1);
    }
    return;
  }
  try {
    const current = readHolder(file);
    if (current === null || (current !== undefined && holderState(current) === 'dead')) unlinkSync(file);
  } finally {
    unlinkSync(claim);
  }
}

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

let releaseOnExit = false;

function hold(key: string, file: string): DataDirLock {
  const held = registry.get(key) ?? { file, holds: 0 };
  held.holds += 1;
  registry.set(key, held);
  if (!releaseOnExit) {
    releaseOnExit = true;
    // Whatever way the process ends short of SIGKILL, its locks go with it.
    process.once('exit', () => {
      for (const [k, entry] of registry) {
        try {
          removeIfOwn(k, entry);
        } catch {
          // Exiting anyway; a lock left behind is recovered as stale by the next start.
        }
      }
    });
  }
  let released = false;
  return {
    lockFile: file,
    release: () => {
      if (released) return;
      released = true;
      held.holds -= 1;
      if (held.holds === 0) removeIfOwn(key, held);
    },
  };
}

/** Removes the lock only if this process holds it: never another process's lock. */
function removeIfOwn(key: string, held: Held): void {
  registry.delete(key);
  const current = readHolder(held.file);
  if (current !== undefined && current !== null && holderState(current) === 'self') {
    unlinkSync(held.file);
  }
}

/**
 * Takes the lock of `dataDir` (created, mode 0700, if missing) for this process, or throws
 * {@link DataDirInUseError} naming the live process that holds it. Reentrant: a process that
 * holds the lock may take it again, and it is removed when every hold is released (or at
 * exit). A lock whose holder is dead, or whose pid now belongs to another process, is taken
 * over; of several processes doing that at once, exactly one wins.
 */
export function acquireDataDirLock(dataDir: string, options: { purpose: string }): DataDirLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = realpathSync(dataDir);
  const file = join(key, LOCK_FILE_NAME);
  if (registry.has(key)) return hold(key, file);
  const record = ownRecord(options.purpose);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (createExclusive(file, record)) return hold(key, file);
    const holder = readHolder(file);
    if (holder === undefined) continue; // released between our link and our read
    const state = holder === null ? 'dead' : holderState(holder);
    if (state === 'self') return hold(key, file);
    if (holder !== null && state !== 'dead') throw new DataDirInUseError(dataDir, file, holder);
    reapIfStale(file);
    if (attempt > 0) pause(RETRY_MS);
  }
  throw new Error(`could not take the lock ${file}: it kept changing hands`);
}
