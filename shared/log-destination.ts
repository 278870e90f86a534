/**
 * Where both processes write their log lines: a file descriptor (stdout), written synchronously
 * in batches, that never blocks the process and never retries forever.
 *
 * Why not pino's own destination (sonic-boom): its flush at exit retried EPIPE forever, so that
 * `npm run gateway | tee log` with the reader gone never exited after SIGTERM and kept its ports
 * (issue 31); a pipe whose reader stopped reading blocked every write, and a full disk threw.
 * Here a write that fails drops what it could not write (counted in `dropped`): a reader that
 * left (EPIPE) ends the writing for good; a full pipe (EAGAIN) keeps up to `maxPendingBytes`
 * for the periodic flush to try again, dropping lines past it; a full disk drops the batch and
 * tries again with the next one.
 */
import { writeSync } from 'node:fs';

export interface LogDestination {
  /** pino's interface: one or more whole lines. */
  write(text: string): boolean;
  /** Writes what is batched, once: never waits, never loops. */
  flushSync(): void;
  flush(callback?: (error?: Error) => void): void;
  /** Bytes of log lines lost to a reader gone, a full pipe or a full disk. */
  readonly dropped: number;
}

export interface LogDestinationOptions {
  /** Lines gather until this many bytes, then go out in one write. */
  minLength?: number;
  /** And go out at least this often. */
  periodicFlushMs?: number;
  /** The most kept while the reader does not read; past it the batch is dropped. */
  maxPendingBytes?: number;
}

const GONE = new Set(['EPIPE', 'EBADF', 'ECONNRESET', 'EINVAL']);

/** A destination on `fd` (1 for stdout). */
export function createLogDestination(fd: number, options: LogDestinationOptions = {}): LogDestination {
  const { minLength = 0, periodicFlushMs = 250, maxPendingBytes = 1024 * 1024 } = options;
  // A pipe's or socket's descriptor is made non-blocking by libuv once Node opens its stream:
  // a full pipe then answers EAGAIN instead of stopping the whole process in write(2).
  if (fd === 1) void process.stdout.fd;
  else if (fd === 2) void process.stderr.fd;
  let pending = '';
  /** What a short write left over, written before `pending`. */
  let rest: Buffer | undefined;
  let gone = false;
  /** The last write met a full pipe: lines wait for the periodic flush rather than retrying each. */
  let stalled = false;
  let dropped = 0;

  const flushSync = () => {
    if (gone || (pending === '' && rest === undefined)) return;
    let data = Buffer.from(pending);
    if (rest !== undefined) data = Buffer.concat([rest, data]);
    pending = '';
    rest = undefined;
    try {
      const written = writeSync(fd, data);
      stalled = written < data.length;
      if (stalled) rest = data.subarray(written);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? '';
      if (GONE.has(code)) gone = true;
      stalled = code === 'EAGAIN';
      if (stalled) rest = data;
      else dropped += data.length;
    }
  };
  const timer = setInterval(flushSync, periodicFlushMs);
  timer.unref();

  return {
    write(text) {
      if (gone || (rest?.length ?? 0) + pending.length + text.length > maxPendingBytes) {
        dropped += text.length;
        return true;
      }
      pending += text;
      if (!stalled && pending.length >= minLength) flushSync();
      return true;
    },
    flushSync,
    flush(callback) {
      flushSync();
      callback?.();
    },
    get dropped() {
      return dropped;
    },
  };
}
