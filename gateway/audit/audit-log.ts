/**
 * The audit log: one sealed JSON line per request, chained by hash (audit-record.ts).
 *
 * record() only queues the entry and returns: formatting, hashing and writing happen a few
 * milliseconds later (BATCH_MS), in order, so a request never waits on the disk. The queue is
 * bounded: past it, entries are counted and dropped rather than exhausting memory, and the
 * next record written says how many were lost (the chain itself stays intact).
 *
 * A batch the file refuses (a full disk, an I/O error) leaves nothing behind (audit-sink.ts):
 * its records are counted as lost, with the period they cover, and the first batch that is
 * written again begins with a gap record stating them, so that a verifier reports a declared
 * gap and its size rather than a broken chain.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { workerSlot } from '../../shared/worker-slot.ts';
import { readChainEnd } from './chain-end.ts';
import {
  GENESIS_PREV,
  sealGapRecord,
  sealRecord,
  sha256Hex,
  type AuditEntry,
  type AuditGap,
} from './audit-record.ts';
import { fileSink, stdoutSink } from './audit-sink.ts';

export type { AuditEntry } from './audit-record.ts';

export interface AuditLogOptions {
  /** File to append to, or `-` for stdout. */
  path: string;
  logger: Logger;
  /** Entries waiting to be written before new ones are dropped. */
  maxQueue?: number;
  /**
   * This writer's chain when several processes append to one file. Defaults to the worker
   * slot under GATEWAY_WORKERS (shared/worker-slot.ts), and to the unnamed chain in a gateway
   * process of its own, the one writer of its file.
   */
  chain?: string | undefined;
  /** Where `portico_audit_records_lost_total` is registered; no metric without. */
  registry?: Registry;
}

export interface AuditLog {
  /** Queues one record; never blocks and never throws. */
  record(entry: AuditEntry): void;
  /** Resolves once every record queued so far is written. */
  flush(): Promise<void>;
  /** Flushes, then closes the file. */
  close(): Promise<void>;
}

/**
 * Records queued within this window are sealed and written together. A file write per
 * event-loop turn showed as ~4-5% of the gateway's CPU in a profile under load; measured here,
 * one 450-byte record per write costs ~23 CPU-µs, eight per write ~4 µs each. A crash can lose
 * what is queued, as before, now up to this long; close() and flush() still write everything.
 */
const BATCH_MS = 5;

/** Opens (or creates, mode 0600) the audit log and continues this writer's chain. */
export function createAuditLog(options: AuditLogOptions): AuditLog {
  const { logger } = options;
  const chain = options.chain ?? workerSlot();
  const maxQueue = options.maxQueue ?? 100_000;
  const toStdout = options.path === '-';
  let { prev, seq, needsNewline } = toStdout
    ? { prev: GENESIS_PREV, seq: 0, needsNewline: false }
    : readChainEnd(options.path, chain);
  if (needsNewline)
    logger.warn({ path: options.path }, 'audit log ends with a cut record; continuing after it');

  const out = toStdout ? stdoutSink(logger) : fileSink(options.path, logger);
  const lost = lostRecordsCounter(options.registry);

  // Each entry with how many were dropped just before it (told in its record).
  let queue: [AuditEntry, number][] = [];
  let dropped = 0;
  // Entries that could not be sealed at the end of the last batch, told by the next record.
  let unsealedBefore = 0;
  // Records lost to failed writes and not yet stated in the file.
  let gap: AuditGap | undefined;
  let scheduled: NodeJS.Timeout | undefined;

  /** Seals `line` as the next record of the chain, appended to `lines`. */
  const append = (lines: string[], line: string) => {
    prev = sha256Hex(line);
    seq += 1;
    lines.push(line);
  };

  function drain(): void {
    clearTimeout(scheduled);
    scheduled = undefined;
    if (queue.length === 0 && gap === undefined) return;
    const batch = queue;
    queue = [];
    const before = { prev, seq };
    const lines: string[] = [];
    if (gap !== undefined) append(lines, sealGapRecord(gap, { chain, seq, prev }, Date.now()));
    let unwritable = unsealedBefore;
    for (const [entry, droppedBefore] of batch) {
      try {
        const lost = droppedBefore + unwritable;
        append(lines, sealRecord(entry, { chain, seq, prev }, lost > 0 ? { dropped: lost } : {}));
        unwritable = 0;
      } catch (error) {
        // Runs outside any request: a throw here would take the process down.
        logger.error({ err: (error as Error).message }, 'audit entry could not be written');
        unwritable += 1;
        lost?.inc();
      }
    }
    if (lines.length === 0) return void (unsealedBefore = unwritable);
    const failure = out.write(`${needsNewline ? '\n' : ''}${lines.join('\n')}\n`);
    if (failure === undefined) {
      needsNewline = false;
      unsealedBefore = unwritable;
      if (gap !== undefined)
        logger.warn(gapFacts(gap), 'audit log written again; the lost records are stated in it');
      gap = undefined;
      return;
    }
    // Nothing of the batch is in the file: the chain goes on from where it was.
    ({ prev, seq } = before);
    // The entries sealed into the batch (a pending gap's own record is not one of them).
    lost?.inc(lines.length - (gap === undefined ? 0 : 1));
    if (gap === undefined)
      logger.error(
        { reason: failure },
        'audit log write failed; counting the records lost until a write succeeds',
      );
    // The batch's own unsealable entries are among those it counts.
    gap = widenGap(gap, batch, failure, unsealedBefore);
    unsealedBefore = 0;
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
        lost?.inc();
        return;
      }
      queue.push([entry.time === undefined ? { ...entry, time: Date.now() } : entry, dropped]);
      dropped = 0;
      scheduled ??= setTimeout(drain, BATCH_MS);
    },
    flush,
    async close() {
      await flush();
      // Still failing: the loss can only be told here.
      if (gap !== undefined)
        logger.error(gapFacts(gap), 'audit log closed with lost records no record states');
      out.close();
    },
  };
}

/** `gap` grown by a batch that could not be written (and the drops its records would have told). */
function widenGap(
  gap: AuditGap | undefined,
  batch: readonly [AuditEntry, number][],
  reason: string,
  unsealedBefore: number,
): AuditGap {
  let records = (gap?.records ?? 0) + unsealedBefore;
  let from = gap?.from ?? Infinity;
  let to = gap?.to ?? -Infinity;
  for (const [entry, droppedBefore] of batch) {
    records += 1 + droppedBefore;
    const time = entry.time ?? Date.now();
    from = Math.min(from, time);
    to = Math.max(to, time);
  }
  if (!Number.isFinite(from)) from = to = Date.now();
  return { records, from, to, reason: gap?.reason ?? reason };
}

const gapFacts = (gap: AuditGap) => ({
  records: gap.records,
  from: new Date(gap.from).toISOString(),
  to: new Date(gap.to).toISOString(),
  reason: gap.reason,
});

/** Records lost (a full queue, an entry that could not be sealed, a failed write), whatever states them. */
function lostRecordsCounter(registry: Registry | undefined): Counter | undefined {
  if (registry === undefined) return undefined;
  const existing = registry.getSingleMetric('portico_audit_records_lost_total');
  if (existing instanceof Counter) return existing;
  return new Counter({
    name: 'portico_audit_records_lost_total',
    help: 'Audit records lost: a full queue, an entry that could not be sealed, or a write the file refused (stated in the log by droppedBefore or a gap record).',
    registers: [registry],
  });
}
