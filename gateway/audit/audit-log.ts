/**
 * The audit log: one sealed JSON line per request, chained by hash (audit-record.ts).
 *
 * record() only queues the entry and returns: formatting, hashing and writing happen a few
 * milliseconds later (BATCH_MS), in order, so a request never waits on the disk. The queue is
 * bounded: past it, entries are counted and dropped rather than exhausting memory, and the
 * next record written says how many were lost (the chain itself stays intact).
 */
import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import type { Logger } from 'pino';
import { GENESIS_PREV, sealRecord, sha256Hex, type AuditEntry } from './audit-record.ts';

export type { AuditEntry } from './audit-record.ts';

export interface AuditLogOptions {
  /** File to append to, or `-` for stdout. */
  path: string;
  logger: Logger;
  /** Entries waiting to be written before new ones are dropped. */
  maxQueue?: number;
}

export interface AuditLog {
  /** Queues one record; never blocks and never throws. */
  record(entry: AuditEntry): void;
  /** Resolves once every record queued so far is written. */
  flush(): Promise<void>;
  /** Flushes, then closes the file. */
  close(): Promise<void>;
}

const TAIL_BYTES = 64 * 1024;
/**
 * Records queued within this window are sealed and written together. A file write per
 * event-loop turn showed as ~4-5% of the gateway's CPU in a profile under load; measured here,
 * one 450-byte record per write costs ~23 CPU-µs, eight per write ~4 µs each. A crash can lose
 * what is queued, as before, now up to this long; close() and flush() still write everything.
 */
const BATCH_MS = 5;

/** Where an existing file's chain ends: the hash of its last line and the next sequence number. */
function readChainEnd(path: string): { prev: string; seq: number; needsNewline: boolean } {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      return { prev: GENESIS_PREV, seq: 0, needsNewline: false };
    throw error;
  }
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return { prev: GENESIS_PREV, seq: 0, needsNewline: false };
    const length = Math.min(size, TAIL_BYTES);
    const tail = Buffer.alloc(length);
    readSync(fd, tail, 0, length, size - length);
    // A crash can leave a cut last line; the chain continues from the last whole one, and
    // the verifier will point at the cut line, which is the truth.
    const needsNewline = tail[length - 1] !== 0x0a;
    const end = tail.lastIndexOf(0x0a, length - 1);
    if (end === -1) throw new Error(`audit log ${path} does not end with a complete audit record`);
    const start = tail.lastIndexOf(0x0a, end - 1) + 1;
    if (start === 0 && length < size) throw new Error(`audit log ${path}: last record longer than 64 KiB`);
    const last = tail.subarray(start, end);
    const { seq } = JSON.parse(last.toString('utf8')) as { seq?: unknown };
    if (typeof seq !== 'number' || !Number.isInteger(seq)) {
      throw new Error(`audit log ${path} does not end with an audit record; move it aside`);
    }
    return { prev: sha256Hex(last), seq: seq + 1, needsNewline };
  } finally {
    closeSync(fd);
  }
}

/** Opens (or creates, mode 0600) the audit log and continues its chain. */
export function createAuditLog(options: AuditLogOptions): AuditLog {
  const { logger } = options;
  const maxQueue = options.maxQueue ?? 100_000;
  const toStdout = options.path === '-';
  let { prev, seq, needsNewline } = toStdout
    ? { prev: GENESIS_PREV, seq: 0, needsNewline: false }
    : readChainEnd(options.path);
  if (needsNewline)
    logger.warn({ path: options.path }, 'audit log ends with a cut record; continuing after it');

  const out = toStdout ? stdoutSink(logger) : fileSink(options.path, logger);

  // Each entry with how many were dropped just before it (told in its record).
  let queue: [AuditEntry, number][] = [];
  let dropped = 0;
  let scheduled: NodeJS.Timeout | undefined;

  function drain(): void {
    clearTimeout(scheduled);
    scheduled = undefined;
    if (queue.length === 0) return;
    const batch = queue;
    queue = [];
    let chunk = needsNewline ? '\n' : '';
    needsNewline = false;
    let unwritable = 0;
    for (const [entry, droppedBefore] of batch) {
      let line: string;
      try {
        const lost = droppedBefore + unwritable;
        line = sealRecord(entry, seq, prev, lost > 0 ? { dropped: lost } : {});
      } catch (error) {
        // Runs outside any request: a throw here would take the process down.
        logger.error({ err: (error as Error).message }, 'audit entry could not be written');
        unwritable += 1;
        continue;
      }
      unwritable = 0;
      prev = sha256Hex(line);
      seq += 1;
      chunk += `${line}\n`;
    }
    out.write(chunk);
  }

  function flush(): Promise<void> {
    drain();
    return out.flushed();
  }

  return {
    record(entry) {
      if (queue.length >= maxQueue) {
        if (dropped === 0) logger.error({ maxQueue }, 'audit log queue full; dropping records');
        dropped += 1;
        return;
      }
      queue.push([entry.time === undefined ? { ...entry, time: Date.now() } : entry, dropped]);
      dropped = 0;
      scheduled ??= setTimeout(drain, BATCH_MS);
    },
    flush,
    async close() {
      await flush();
      out.close();
    },
  };
}

/** Where sealed batches go. */
interface Sink {
  write(chunk: string): void;
  /** Resolves once everything written so far is out. */
  flushed(): Promise<void>;
  close(): void;
}

/**
 * The file, appended to synchronously, one write per batch: an asynchronous write hands each
 * batch to a libuv pool thread, and waking that thread cost the gateway more than the write
 * (~4% of its CPU under load in a profile). A page-cache append of a few KiB takes microseconds.
 */
function fileSink(path: string, logger: Logger): Sink {
  const fd = openSync(path, 'a', 0o600);
  let closed = false;
  return {
    write(chunk) {
      if (closed) return;
      try {
        const bytes = Buffer.from(chunk);
        for (let offset = 0; offset < bytes.length;)
          offset += writeSync(fd, bytes, offset, bytes.length - offset);
      } catch (error) {
        logger.error({ err: (error as Error).message }, 'audit log write failed');
      }
    },
    flushed: () => Promise.resolve(),
    close() {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
  };
}

/** Standard output (`-`), through Node's stream, which may be a pipe that is not ready. */
function stdoutSink(logger: Logger): Sink {
  const out = process.stdout;
  out.on('error', (error: Error) => logger.error({ err: error.message }, 'audit log write failed'));
  return {
    write: (chunk) => void out.write(chunk),
    // Writes complete in order: the callback of an empty write comes after all before it.
    flushed: () => new Promise((resolve) => out.write('', () => resolve())),
    close() {},
  };
}
