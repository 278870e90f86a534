/**
 * Where a writer's chain ends in an existing audit log, so that a restarted gateway (or a
 * replaced worker, which takes its predecessor's slot) continues its chain instead of
 * starting a second one that a verifier could not tell from an inserted chain.
 *
 * The file is read backwards a block at a time until the last record of the chain is found:
 * usually within the last block, since every worker writes every few milliseconds under
 * traffic; the whole file once when the chain is new to it (a worker slot added).
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { GENESIS_PREV, sha256Hex } from './audit-record.ts';

export interface ChainEnd {
  /** The hash of the chain's last record, or the genesis value for a chain new to the file. */
  prev: string;
  /** The next sequence number of the chain. */
  seq: number;
  /** The file ends with a cut line: the next write starts with a newline to close it. */
  needsNewline: boolean;
}

const BLOCK_BYTES = 64 * 1024;
const MAX_RECORD_BYTES = 1024 * 1024;
/** A record's chain sits right after its sequence number (audit-record.ts writes it so). */
const HEAD = /^\{"seq":(\d+)(?:,"chain":"((?:[^"\\]|\\.)*)")?/;

/** The end of chain `chain` (undefined: the unnamed chain) in the log at `path`. */
export function readChainEnd(path: string, chain: string | undefined): ChainEnd {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      return { prev: GENESIS_PREV, seq: 0, needsNewline: false };
    throw error;
  }
  try {
    return scanBackwards(fd, path, chain);
  } finally {
    closeSync(fd);
  }
}

function scanBackwards(fd: number, path: string, chain: string | undefined): ChainEnd {
  const { size, needsNewline } = settledEnd(fd);
  if (size === 0) return { prev: GENESIS_PREV, seq: 0, needsNewline: false };
  // The bytes after the file's last newline are a cut line (or nothing): skipped.
  let seekingLastNewline = true;
  let newestChecked = false;
  // The start of a line whose beginning lies in an earlier block.
  let carry = Buffer.alloc(0);
  for (let end = size; end > 0;) {
    const start = Math.max(0, end - BLOCK_BYTES);
    const block = Buffer.alloc(end - start);
    readSync(fd, block, 0, block.length, start);
    const data = Buffer.concat([block, carry]);
    let lineEnd = data.length;
    if (seekingLastNewline) lineEnd = data.lastIndexOf(0x0a);
    if (lineEnd !== -1) {
      seekingLastNewline = false;
      for (;;) {
        const lineStart = lineEnd === 0 ? 0 : data.lastIndexOf(0x0a, lineEnd - 1) + 1;
        if (lineStart === 0 && start > 0) break; // the line begins in an earlier block
        const line = data.subarray(lineStart, lineEnd);
        if (!newestChecked) checkIsAuditRecord(line, path);
        newestChecked = true;
        const found = chainOf(line, chain);
        if (found !== undefined) return { prev: sha256Hex(line), seq: found + 1, needsNewline };
        if (lineStart === 0) break;
        lineEnd = lineStart - 1;
      }
    }
    carry = lineEnd === -1 ? data : data.subarray(0, lineEnd);
    if (carry.length > MAX_RECORD_BYTES) throw new Error(`audit log ${path}: a record longer than 1 MiB`);
    end = start;
  }
  if (!newestChecked) throw new Error(`audit log ${path} does not end with a complete audit record`);
  return { prev: GENESIS_PREV, seq: 0, needsNewline };
}

/** A file ending mid-line is looked at LOOKS times, SETTLE_MS apart (200 ms at most). */
const SETTLE_MS = 50;
const LOOKS = 5;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * The file's size and whether it ends mid-line. A crash can leave a cut last line; the chain
 * continues after it (on a line of its own), and the verifier points at the cut line, which
 * is the truth. But a worker's batch may also be in the middle of being appended (the size
 * grows page by page while another worker writes): a newline written in front of our first
 * batch would then leave an empty line after it. So a line that ends mid-way is looked at
 * again a little later, at start-up only, before it is taken for cut.
 */
function settledEnd(fd: number): { size: number; needsNewline: boolean } {
  const last = Buffer.alloc(1);
  let size = fstatSync(fd).size;
  for (let look = 1; ; look++) {
    if (size === 0) return { size, needsNewline: false };
    readSync(fd, last, 0, 1, size - 1);
    if (last[0] === 0x0a || look === LOOKS) return { size, needsNewline: last[0] !== 0x0a };
    // A synchronous pause: the file is opened once, before the gateway serves anything.
    Atomics.wait(pause, 0, 0, SETTLE_MS);
    size = fstatSync(fd).size;
  }
}

/** The record's sequence number when it belongs to `chain`, else undefined. */
function chainOf(line: Buffer, chain: string | undefined): number | undefined {
  const head = HEAD.exec(line.subarray(0, 300).toString('utf8'));
  if (head === null) return undefined;
  const named = head[2] === undefined ? undefined : (JSON.parse(`"${head[2]}"`) as string);
  return named === chain ? Number(head[1]) : undefined;
}

/** The newest whole line must be an audit record: anything else is not our file. */
function checkIsAuditRecord(line: Buffer, path: string): void {
  let seq: unknown;
  try {
    ({ seq } = JSON.parse(line.toString('utf8')) as { seq?: unknown });
  } catch {
    seq = undefined;
  }
  if (typeof seq !== 'number' || !Number.isInteger(seq))
    throw new Error(`audit log ${path} does not end with an audit record; move it aside`);
}
