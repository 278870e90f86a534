/**
 * The audit log across writers and faults: one chain per writer in one file, each continued
 * after a restart; a full disk (a real tmpfs, mounted here as root) leaves no torn record, and
 * the records it cost are counted and declared where the chain resumes, so that verify reports
 * a declared gap apart from tampering, which it still names.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createAuditLog, type AuditEntry } from '../../../gateway/audit/audit-log.ts';
import { sealRecord, sha256Hex } from '../../../gateway/audit/audit-record.ts';
import { verifyAuditFile } from '../../../gateway/audit/verify-chain.ts';
import { memoryLogger } from '../identity/support/fixtures.ts';

const run = promisify(execFile);
const AUDIT_CLI = new URL('../../../scripts/audit.ts', import.meta.url).pathname;

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function dir(): string {
  const made = mkdtempSync(join(tmpdir(), 'portico-audit-chains-'));
  cleanups.push(() => rmSync(made, { recursive: true, force: true }));
  return made;
}

const START = Date.UTC(2026, 10, 26, 12, 0, 0);
const entry = (n: number): AuditEntry => ({
  time: START + n,
  requestId: `req-${n}`,
  subject: 'client-a',
  method: 'GET',
  path: '/v1/orders',
  status: 200,
  latencyMs: 1,
  authOutcome: 'ok',
});

async function writeChain(path: string, chain: string | undefined, from: number, count: number) {
  const log = createAuditLog({ path, logger: memoryLogger().logger, chain });
  for (let n = from; n < from + count; n += 1) log.record(entry(n));
  await log.close();
}

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '');

async function cli(path: string) {
  try {
    const { stdout } = await run(process.execPath, [AUDIT_CLI, 'verify', path]);
    return { code: 0, stdout };
  } catch (error) {
    const e = error as { code: number; stdout: string };
    return { code: e.code, stdout: e.stdout };
  }
}

describe('one chain per writer', () => {
  it('interleaved chains each verify, and each continues its own after a restart', async () => {
    const path = join(dir(), 'audit.log');
    // Chain 2's end lies more than one read block (64 KiB) before the end of the file.
    await writeChain(path, '2', 0, 5);
    await writeChain(path, '1', 100, 400);
    await writeChain(path, '2', 5, 3);
    await writeChain(path, '1', 500, 2);
    const records = lines(path).map((l) => JSON.parse(l) as { seq: number; chain: string });
    expect(records.filter((r) => r.chain === '2').map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(
      records
        .filter((r) => r.chain === '1')
        .map((r) => r.seq)
        .at(-1),
    ).toBe(401);
    expect(await verifyAuditFile(path)).toEqual({ ok: true, records: 410, chains: { '1': 402, '2': 8 } });
    expect(await cli(path)).toEqual({ code: 0, stdout: 'OK 410 records in 2 chains (1: 402, 2: 8)\n' });
  });

  it('a writer opening while another worker appends a batch waits for its end: no empty line', async () => {
    const path = join(dir(), 'audit.log');
    await writeChain(path, '1', 0, 3);
    // Chain 1's next record, sealed for real, appended in two parts by another process: the
    // second part lands just after this writer has opened the file.
    const line = sealRecord(entry(3), { chain: '1', seq: 3, prev: sha256Hex(lines(path).at(-1)!) });
    const half = Math.floor(line.length / 2);
    const child = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('node:fs');
         fs.appendFileSync(process.argv[1], process.argv[2]);
         console.log('half');
         const until = Date.now() + 60;
         while (Date.now() < until);
         fs.appendFileSync(process.argv[1], process.argv[3]);`,
        path,
        line.slice(0, half),
        `${line.slice(half)}\n`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await new Promise((resolve) => child.stdout.once('data', resolve));
    const log = createAuditLog({ path, logger: memoryLogger().logger, chain: '2' });
    log.record(entry(4));
    await log.close();
    await exited;
    expect(readFileSync(path, 'utf8')).not.toContain('\n\n');
    expect(await verifyAuditFile(path)).toEqual({ ok: true, records: 5, chains: { '1': 4, '2': 1 } });
  });

  it('still names a record removed from one of several chains', async () => {
    const path = join(dir(), 'audit.log');
    await writeChain(path, '1', 0, 3);
    await writeChain(path, '2', 3, 3);
    await writeChain(path, '1', 6, 3);
    const kept = lines(path);
    kept.splice(4, 1); // chain 2's second record
    writeFileSync(path, `${kept.join('\n')}\n`);
    expect((await verifyAuditFile(path)).firstBroken).toEqual({
      line: 5,
      reason: expect.stringMatching(/does not follow the previous one of chain 2.*removed/),
    });
    expect((await cli(path)).code).toBe(1);
  });
});

describe('a full disk under the audit log', () => {
  /** A tmpfs of `size` mounted on a directory of its own; unmounted after the test. */
  function smallDisk(size: string): string {
    const mountPoint = dir();
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mountPoint]);
    // Lazy: a failed test may still hold the log open; the mount must not outlive the run.
    cleanups.push(() => execFileSync('umount', ['--lazy', mountPoint]));
    return mountPoint;
  }

  it('leaves no torn record, counts what it lost, and declares the gap where the chain resumes', async () => {
    const disk = smallDisk('256k');
    const path = join(disk, 'audit.log');
    // Room to give back once the log has filled the disk.
    const filler = join(disk, 'filler');
    writeFileSync(filler, Buffer.alloc(64 * 1024));
    const { logger, lines: logged } = memoryLogger();
    const registry = new Registry();
    const log = createAuditLog({ path, logger, registry });
    cleanups.push(() => void log.close());
    let n = 0;
    for (; n < 1500; n += 1) {
      log.record(entry(n));
      if (n % 50 === 49) await log.flush();
    }
    await log.flush();
    // Every line is a whole record: nothing torn where the disk filled.
    expect(readFileSync(path, 'utf8').endsWith('\n')).toBe(true);
    for (const line of lines(path)) expect(() => JSON.parse(line) as unknown).not.toThrow();
    expect(logged()).toContain('audit log write failed');

    unlinkSync(filler);
    for (const last = n + 10; n < last; n += 1) log.record(entry(n));
    await log.close();

    const records = lines(path).map((l) => JSON.parse(l) as Record<string, unknown>);
    const entries = records.filter((r) => r['requestId'] !== undefined);
    const written = entries.filter((r) => Number(String(r['requestId']).slice(4)) < 1500).length;
    expect(written).toBeGreaterThan(100);
    expect(written).toBeLessThan(1500);
    // Whole batches were lost, each counted, in order; the chain resumed with what followed.
    expect(entries.map((r) => r['requestId'])).toEqual([
      ...Array.from({ length: written }, (_, i) => `req-${i}`),
      ...Array.from({ length: 10 }, (_, i) => `req-${1500 + i}`),
    ]);
    const gaps = records.flatMap((r, index) =>
      r['gap'] === undefined ? [] : [{ line: index + 1, ...(r['gap'] as { records: number }) }],
    );
    expect(gaps.length).toBeGreaterThan(0);
    expect(gaps[0]).toMatchObject({
      line: written + 1,
      from: new Date(START + written).toISOString(),
      reason: expect.stringMatching(/ENOSPC|short write/),
    });
    expect(gaps.reduce((sum, gap) => sum + gap.records, 0)).toBe(1500 - written);
    expect(await registry.getSingleMetricAsString('portico_audit_records_lost_total')).toMatch(
      new RegExp(`^portico_audit_records_lost_total ${1500 - written}$`, 'm'),
    );
    expect(gaps.at(-1)).toMatchObject({ to: new Date(START + 1499).toISOString() });
    expect(await verifyAuditFile(path)).toEqual({ ok: true, records: records.length, gaps });
    console.info(
      `full disk (256 KiB tmpfs): ${written} of 1500 records written, ${1500 - written} lost in whole batches, ` +
        `declared by ${gaps.length} gap record(s); no torn line`,
    );
    const verdict = await cli(path);
    expect(verdict.code).toBe(3);
    expect(verdict.stdout).toMatch(
      new RegExp(
        `^GAPS ${records.length} records intact; ${1500 - written} records declared lost in ${gaps.length} gaps:`,
      ),
    );

    // Tampering is still told apart: a record removed after the gap, or the gap made smaller.
    const tampered = lines(path);
    tampered.splice(gaps[0]!.line + 1, 1);
    writeFileSync(path, `${tampered.join('\n')}\n`);
    expect(await cli(path)).toMatchObject({ code: 1, stdout: expect.stringMatching(/^BROKEN at record/) });
    const shrunk = lines(path);
    const gapLine = gaps[0]!.line;
    shrunk[gapLine - 1] = shrunk[gapLine - 1]!.replace(/"records":\d+/, '"records":1');
    writeFileSync(path, `${shrunk.slice(0, gapLine + 1).join('\n')}\n`);
    expect((await verifyAuditFile(path)).firstBroken).toEqual({
      line: gapLine,
      reason: expect.stringMatching(/changed/),
    });
  });
});
