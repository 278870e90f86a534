/**
 * The audit log: one sealed record per request, written off the request path, chained by
 * hash; a changed, removed or reordered record is named by the verifier and by the CLI.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createAuditLog, type AuditEntry } from '../../../gateway/audit/audit-log.ts';
import { sha256Hex } from '../../../gateway/audit/audit-record.ts';
import { verifyAuditFile } from '../../../gateway/audit/verify-chain.ts';
import { memoryLogger, tempDir } from '../identity/support/fixtures.ts';

const run = promisify(execFile);
const AUDIT_CLI = new URL('../../../scripts/audit.ts', import.meta.url).pathname;

function entry(n: number, overrides: Partial<AuditEntry> = {}): AuditEntry {
  return {
    time: Date.UTC(2026, 10, 22, 12, 0, n),
    requestId: `req-${n}`,
    subject: 'client-a',
    customerId: 'cust-a',
    clientAddress: '203.0.113.7',
    method: 'GET',
    path: '/v1/orders',
    status: 200,
    latencyMs: 1.2345,
    authOutcome: 'ok',
    ...overrides,
  };
}

async function writeLog(count: number, path = join(tempDir('audit'), 'audit.log')): Promise<string> {
  const log = createAuditLog({ path, logger: memoryLogger().logger });
  for (let n = 0; n < count; n += 1) log.record(entry(n));
  await log.close();
  return path;
}

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '');
const rewrite = (path: string, records: string[]) => writeFileSync(path, `${records.join('\n')}\n`);

async function cli(...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [AUDIT_CLI, ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('writing', () => {
  it('creates the folder of a log that does not exist yet (a data dir made for this gateway)', async () => {
    const path = join(tempDir('audit'), 'data-dir', 'not-yet', 'audit.log');
    await writeLog(3, path);
    expect(lines(path)).toHaveLength(3);
    expect(await verifyAuditFile(path)).toMatchObject({ ok: true, records: 3 });
  });

  it('writes one chained record per entry, in order, after record() has returned', async () => {
    const path = join(tempDir('audit'), 'audit.log');
    const log = createAuditLog({ path, logger: memoryLogger().logger });
    log.record(entry(0));
    // Nothing is written in the caller's turn: the request never waits on the disk.
    expect(existsSync(path) ? readFileSync(path, 'utf8') : '').toBe('');
    for (let n = 1; n < 5; n += 1) log.record(entry(n));
    await log.flush();
    const records = lines(path).map((l) => JSON.parse(l));
    expect(records.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(records.map((r) => r.requestId)).toEqual(['req-0', 'req-1', 'req-2', 'req-3', 'req-4']);
    expect(records[0].prev).toBe('0'.repeat(64));
    expect(records[1].prev).toBe(sha256Hex(lines(path)[0]!));
    expect(records[0]).toMatchObject({
      time: '2026-11-22T12:00:00.000Z',
      subject: 'client-a',
      customerId: 'cust-a',
      clientAddress: '203.0.113.7',
      method: 'GET',
      path: '/v1/orders',
      status: 200,
      latencyMs: 1.235,
      auth: { outcome: 'ok' },
    });
    await log.close();
    expect(await verifyAuditFile(path)).toEqual({ ok: true, records: 5 });
  });

  it('continues the chain of an existing file across restarts', async () => {
    const path = await writeLog(3);
    const log = createAuditLog({ path, logger: memoryLogger().logger });
    log.record(entry(3));
    await log.close();
    expect(lines(path).map((l) => JSON.parse(l).seq)).toEqual([0, 1, 2, 3]);
    expect(await verifyAuditFile(path)).toEqual({ ok: true, records: 4 });
  });

  it('never writes a token, key or query string, and escapes control characters', async () => {
    const path = join(tempDir('audit'), 'audit.log');
    const log = createAuditLog({ path, logger: memoryLogger().logger });
    const smuggled = {
      ...entry(0, {
        path: '/v1/orders?access_token=eyJsecret',
        authReason: 'bad\n{"forged":true}\u2028\u0085\u001b[31m\u007f',
      }),
      authorization: 'Bearer eyJsecret',
      apiKey: 'pk_secret',
    } as AuditEntry;
    log.record(smuggled);
    await log.close();
    const text = readFileSync(path, 'utf8');
    expect(text).not.toMatch(/secret/);
    expect(text.split('\n')).toHaveLength(2); // one line and the final newline
    // eslint-disable-next-line no-control-regex -- the point: no raw control character survives
    expect(text).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029](?!$)/u);
    expect(text).toContain('\\u2028');
    expect(text).toContain('\\u0085');
    expect(text).toContain('\\u007f');
    const record = JSON.parse(text);
    expect(record.path).toBe('/v1/orders');
    expect(record.auth.reason).toBe('bad\n{"forged":true}\u2028\u0085\u001b[31m\u007f');
    expect(await verifyAuditFile(path)).toEqual({ ok: true, records: 1 });
  });

  it('drops beyond its queue bound and says so in the next record, chain intact', async () => {
    const path = join(tempDir('audit'), 'audit.log');
    const log = createAuditLog({ path, logger: memoryLogger().logger, maxQueue: 2 });
    for (let n = 0; n < 5; n += 1) log.record(entry(n));
    await log.flush();
    log.record(entry(5));
    await log.close();
    const records = lines(path).map((l) => JSON.parse(l));
    expect(records.map((r) => r.requestId)).toEqual(['req-0', 'req-1', 'req-5']);
    expect(records[2].droppedBefore).toBe(3);
    expect((await verifyAuditFile(path)).ok).toBe(true);
  });
});

describe('verifying', () => {
  it('names a changed record', async () => {
    const path = await writeLog(5);
    const records = lines(path);
    records[2] = records[2]!.replace('"status":200', '"status":201');
    rewrite(path, records);
    expect(await verifyAuditFile(path)).toEqual({
      ok: false,
      records: 2,
      firstBroken: { line: 3, reason: expect.stringMatching(/changed/) },
    });
  });

  it('names a changed record whose own hash was recomputed (the next record no longer follows)', async () => {
    const path = await writeLog(5);
    const records = lines(path);
    const body = records[2]!
      .replace('"status":200', '"status":500')
      .replace(/,"hash":"[0-9a-f]{64}"\}$/, '}');
    records[2] = `${body.slice(0, -1)},"hash":"${sha256Hex(body)}"}`;
    rewrite(path, records);
    const report = await verifyAuditFile(path);
    expect(report.firstBroken).toEqual({ line: 4, reason: expect.stringMatching(/does not follow/) });
  });

  it('names a removed record', async () => {
    const path = await writeLog(5);
    const records = lines(path);
    records.splice(2, 1);
    rewrite(path, records);
    expect((await verifyAuditFile(path)).firstBroken).toEqual({
      line: 3,
      reason: expect.stringMatching(/removed/),
    });
  });

  it('names the first record removed from the start', async () => {
    const path = await writeLog(3);
    rewrite(path, lines(path).slice(1));
    expect((await verifyAuditFile(path)).firstBroken).toEqual({
      line: 1,
      reason: expect.stringMatching(/removed/),
    });
  });

  it('names reordered records', async () => {
    const path = await writeLog(5);
    const records = lines(path);
    [records[1], records[3]] = [records[3]!, records[1]!];
    rewrite(path, records);
    expect((await verifyAuditFile(path)).firstBroken).toEqual({
      line: 2,
      reason: expect.stringMatching(/reordered/),
    });
  });

  it('names a cut last record', async () => {
    const path = await writeLog(3);
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, text.slice(0, -10));
    expect((await verifyAuditFile(path)).firstBroken?.line).toBe(3);
  });
});

describe('npm run -s audit -- verify FILE', () => {
  it('prints OK with the count and exits 0 for an intact log', async () => {
    const path = await writeLog(4);
    expect(await cli('verify', path)).toMatchObject({ code: 0, stdout: 'OK 4 records\n' });
  });

  it('exits 1 naming the first broken record', async () => {
    const path = await writeLog(4);
    const records = lines(path);
    records.splice(1, 1);
    rewrite(path, records);
    const result = await cli('verify', path);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^BROKEN at record 2: /);
  });

  // An unreadable file is an operator's mistake (exit 2), not a tampered chain (exit 1): 94c3dc2.
  it('exits 2 with usage on bad arguments, and on an unreadable file', async () => {
    expect(await cli()).toMatchObject({ code: 2, stderr: expect.stringMatching(/^usage:/m) });
    expect(await cli('check', 'x')).toMatchObject({ code: 2 });
    expect(await cli('verify', join(tempDir('audit'), 'missing.log'))).toMatchObject({
      code: 2,
      stderr: /ENOENT/,
    });
  });
});
