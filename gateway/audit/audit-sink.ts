/**
 * Where sealed batches of audit records go: the file, or standard output (`-`).
 *
 * The file sink's promise: a batch is in the file whole or not at all. Every batch is one
 * append (O_APPEND), which the kernel does not interleave with another writer's on a local
 * file system, so the workers' batches never mix. A write that fails part-way (a full disk
 * returns a short count) is retracted: the file is cut back to where the batch began, after
 * reading back that what follows is this batch's own bytes, so no torn record stays for the
 * verifier to take for tampering. The caller counts the batch as lost and says so later.
 */
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';

/** Where sealed batches go. */
export interface Sink {
  /** Writes the whole chunk or nothing; the failure's code when nothing was written. */
  write(chunk: string): string | undefined;
  /** Resolves once everything written so far is out. */
  flushed(): Promise<void>;
  close(): void;
}

/**
 * The file, appended to synchronously, one write per batch: an asynchronous write hands each
 * batch to a libuv pool thread, and waking that thread cost the gateway more than the write
 * (~4% of its CPU under load in a profile). A page-cache append of a few KiB takes microseconds.
 */
export function fileSink(path: string, logger: Logger): Sink {
  // A data dir named for a new gateway need not exist yet, and the audit log may be the first
  // file the gateway writes in it; like the data dir's other files, readable by its owner only.
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // Read as well as append: a partial write is read back before it is cut off.
  const fd = openSync(path, 'a+', 0o600);
  let closed = false;
  return {
    write(chunk) {
      if (closed) return 'closed';
      const bytes = Buffer.from(chunk);
      let written: number;
      try {
        // One call: a second one for the rest could land after another worker's batch.
        written = writeSync(fd, bytes, 0, bytes.length);
      } catch (error) {
        return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      }
      if (written === bytes.length) return undefined;
      retract(fd, bytes.subarray(0, written), logger);
      return 'short write';
    },
    flushed: () => Promise.resolve(),
    close() {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
  };
}

/**
 * Cuts `partial`, just appended, off the end of the file. Only when the file still ends with
 * exactly those bytes: were another writer's batch after them, cutting would lose it, and the
 * torn record is left for the verifier (a full disk gives no room for that batch, so this is
 * a race with space freed in the same microseconds).
 */
function retract(fd: number, partial: Buffer, logger: Logger): void {
  try {
    const size = fstatSync(fd).size;
    const start = size - partial.length;
    const tail = Buffer.alloc(partial.length);
    if (start >= 0) readSync(fd, tail, 0, tail.length, start);
    if (start >= 0 && tail.equals(partial)) {
      ftruncateSync(fd, start);
      return;
    }
    logger.error(
      { bytes: partial.length },
      'audit log: a partial write could not be retracted; verify will name it',
    );
  } catch (error) {
    logger.error({ err: (error as Error).message }, 'audit log: a partial write could not be retracted');
  }
}

/** Standard output (`-`), through Node's stream, which may be a pipe that is not ready. */
export function stdoutSink(logger: Logger): Sink {
  const out = process.stdout;
  out.on('error', (error: Error) => logger.error({ err: error.message }, 'audit log write failed'));
  return {
    write: (chunk) => void out.write(chunk),
    // Writes complete in order: the callback of an empty write comes after all before it.
    flushed: () => new Promise((resolve) => out.write('', () => resolve())),
    close() {},
  };
}
