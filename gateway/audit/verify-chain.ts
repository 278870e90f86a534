/**
 * Checks an audit log's hash chains and names the first record where one breaks. Reads the
 * file as a stream of exact bytes: hashing re-encoded text would miss or invent differences.
 *
 * Each writer's records form a chain of their own (audit-record.ts), interleaved in the file
 * by the time they were written; each is checked on its own. Losses the writer declared (a gap
 * record after failed writes, `droppedBefore` after a full queue) are reported apart: the
 * chain is intact and says what it lacks, which is not tampering.
 *
 * What it cannot see: records cut from the end of a chain (nothing follows them), a whole
 * chain removed, or a chain rewritten whole by someone with write access. Ship the log off the
 * host, or anchor its latest hashes elsewhere, when that matters.
 */
import { createReadStream } from 'node:fs';
import { GENESIS_PREV, sha256Hex, unsealRecord } from './audit-record.ts';

/** Records a writer declared lost, where its chain resumed. */
export interface DeclaredGap {
  /** 1-based line of the record that declares it. */
  line: number;
  /** The writer's chain; absent for the unnamed chain. */
  chain?: string;
  records: number;
  /** The period of the lost records, when the writer knew it (a failed write). */
  from?: string;
  to?: string;
  reason: string;
}

export interface ChainReport {
  ok: boolean;
  /** Records that verified, all of them when `ok`. */
  records: number;
  /** 1-based line number of the first bad record and why it is bad. */
  firstBroken?: { line: number; reason: string };
  /** Records per chain, when the file holds named chains (the unnamed one as `""`). */
  chains?: Record<string, number>;
  /** Losses the log declares, when there are any. */
  gaps?: DeclaredGap[];
}

interface Record_ {
  seq?: unknown;
  chain?: unknown;
  prev?: unknown;
  droppedBefore?: unknown;
  gap?: { records?: unknown; from?: unknown; to?: unknown; reason?: unknown };
}

const NEWLINE = 0x0a;

/** Per chain, the hash its next record must name and the sequence number it must carry. */
class Chains {
  readonly ends = new Map<string, { prev: string; seq: number; records: number }>();
  readonly gaps: DeclaredGap[] = [];
  named = false;

  /** Why the record on `lineNo` does not verify, or undefined when it does. */
  check(bytes: Buffer, lineNo: number): string | undefined {
    const line = bytes.toString('utf8');
    let record: Record_;
    try {
      record = JSON.parse(line) as Record_;
    } catch {
      return 'not a JSON record';
    }
    const sealed = unsealRecord(line);
    if (sealed === undefined) return 'record has no hash';
    if (sha256Hex(sealed.body) !== sealed.hash)
      return 'record was changed (its content does not match its hash)';
    const name = typeof record.chain === 'string' ? record.chain : '';
    if (name !== '') this.named = true;
    const of = name === '' ? '' : ` of chain ${name}`;
    const end = this.ends.get(name);
    if (record.prev !== (end?.prev ?? GENESIS_PREV)) {
      return end === undefined
        ? `the first record${of} does not start the chain (records before it were removed)`
        : `record does not follow the previous one${of} (a record was removed, inserted or reordered)`;
    }
    const expectedSeq = end?.seq ?? 0;
    if (record.seq !== expectedSeq)
      return `sequence number ${String(record.seq)}${of}, expected ${expectedSeq}`;
    this.ends.set(name, { prev: sha256Hex(bytes), seq: expectedSeq + 1, records: (end?.records ?? 0) + 1 });
    this.#noteGap(record, name, lineNo);
    return undefined;
  }

  #noteGap(record: Record_, chain: string, line: number): void {
    const where = { line, ...(chain === '' ? {} : { chain }) };
    const dropped = record.droppedBefore;
    if (typeof dropped === 'number' && dropped > 0)
      this.gaps.push({ ...where, records: dropped, reason: 'queue full or unsealable entries' });
    const gap = record.gap;
    if (gap !== undefined && typeof gap.records === 'number')
      this.gaps.push({
        ...where,
        records: gap.records,
        ...(typeof gap.from === 'string' ? { from: gap.from } : {}),
        ...(typeof gap.to === 'string' ? { to: gap.to } : {}),
        reason: typeof gap.reason === 'string' ? gap.reason : 'unknown',
      });
  }

  /** The report's chain and gap fields: present only when there is something to say. */
  summary(): Pick<ChainReport, 'chains' | 'gaps'> {
    const chains = Object.fromEntries([...this.ends].map(([name, end]) => [name, end.records]));
    return {
      ...(this.named ? { chains } : {}),
      ...(this.gaps.length > 0 ? { gaps: this.gaps } : {}),
    };
  }
}

/** Verifies the chains of the audit log at `path`. Rejects only when the file cannot be read. */
export async function verifyAuditFile(path: string): Promise<ChainReport> {
  const chains = new Chains();
  let lineNo = 0;
  let carry = Buffer.alloc(0);

  for await (const chunk of createReadStream(path)) {
    let data = Buffer.concat([carry, chunk as Buffer]);
    let newline: number;
    while ((newline = data.indexOf(NEWLINE)) !== -1) {
      lineNo += 1;
      const reason = chains.check(data.subarray(0, newline), lineNo);
      if (reason !== undefined)
        return { ok: false, records: lineNo - 1, firstBroken: { line: lineNo, reason }, ...chains.summary() };
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
      ...chains.summary(),
    };
  }
  return { ok: true, records: lineNo, ...chains.summary() };
}
