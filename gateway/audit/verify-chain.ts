/**
 * Checks an audit log's hash chain and names the first record where it breaks. Reads the file
 * as a stream of exact bytes: hashing re-encoded text would miss or invent differences.
 *
 * What it cannot see: records cut from the end of the file (nothing follows them), or a
 * chain rewritten whole by someone with write access. Ship the log off the host, or anchor
 * its latest hash elsewhere, when that matters.
 */
import { createReadStream } from 'node:fs';
import { GENESIS_PREV, sha256Hex, unsealRecord } from './audit-record.ts';

export interface ChainReport {
  ok: boolean;
  /** Records that verified, all of them when `ok`. */
  records: number;
  /** 1-based line number of the first bad record and why it is bad. */
  firstBroken?: { line: number; reason: string };
}

const NEWLINE = 0x0a;

/** Verifies the chain of the audit log at `path`. Rejects only when the file cannot be read. */
export async function verifyAuditFile(path: string): Promise<ChainReport> {
  let prev = GENESIS_PREV;
  let expectedSeq = 0;
  let lineNo = 0;
  let carry = Buffer.alloc(0);

  const check = (bytes: Buffer): string | undefined => {
    const line = bytes.toString('utf8');
    let record: { seq?: unknown; prev?: unknown };
    try {
      record = JSON.parse(line) as typeof record;
    } catch {
      return 'not a JSON record';
    }
    const sealed = unsealRecord(line);
    if (sealed === undefined) return 'record has no hash';
    if (sha256Hex(sealed.body) !== sealed.hash)
      return 'record was changed (its content does not match its hash)';
    if (record.prev !== prev) {
      return lineNo === 1
        ? 'the first record does not start the chain (records before it were removed)'
        : 'record does not follow the previous one (a record was removed, inserted or reordered)';
    }
    if (record.seq !== expectedSeq) return `sequence number ${String(record.seq)}, expected ${expectedSeq}`;
    prev = sha256Hex(bytes);
    expectedSeq += 1;
    return undefined;
  };

  for await (const chunk of createReadStream(path)) {
    let data = Buffer.concat([carry, chunk as Buffer]);
    let newline: number;
    while ((newline = data.indexOf(NEWLINE)) !== -1) {
      lineNo += 1;
      const reason = check(data.subarray(0, newline));
      if (reason !== undefined)
        return { ok: false, records: lineNo - 1, firstBroken: { line: lineNo, reason } };
      data = data.subarray(newline + 1);
    }
    carry = data;
  }
  if (carry.length > 0) {
    return {
      ok: false,
      records: lineNo,
      firstBroken: {
        line: lineNo + 1,
        reason: 'incomplete last record (no newline: cut or still being written)',
      },
    };
  }
  return { ok: true, records: lineNo };
}
