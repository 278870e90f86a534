/**
 * One data dir, one owner: a second `npm start` on a data dir in use refuses before it touches
 * the embedded database; a lock left by a killed process is recovered, with the data intact.
 */
import { spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startEmbeddedDatabase } from '../../resource-service/db/embedded.ts';
import { acquireDataDirLock, DataDirInUseError, LOCK_FILE_NAME } from '../../shared/data-dir-lock.ts';
import type { LockHolder } from '../../shared/data-dir-lock.ts';
import { runStartToExit, spawnContender, startPortico, stopProcess } from './support/portico-process.ts';
import type { Contender, RunningPortico } from './support/portico-process.ts';

const temporary: string[] = [];
const running: RunningPortico[] = [];
const children: ChildProcess[] = [];

function tempDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'portico-lock-'));
  temporary.push(dir);
  return dir;
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

afterAll(() => {
  for (const portico of running) if (portico.child.exitCode === null) portico.child.kill('SIGKILL');
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
});

/** A contender process that has taken the lock of `dataDir` and holds it until killed. */
async function holdInOtherProcess(dataDir: string): Promise<Contender> {
  const holder = spawnContender(dataDir);
  children.push(holder.child);
  expect(await holder.result).toBe('won');
  return holder;
}

/** A lock left by a process that was killed while holding it. */
async function leaveStaleLock(dataDir: string): Promise<number> {
  const holder = await holdInOtherProcess(dataDir);
  await stopProcess(holder.child, 'SIGKILL');
  expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(true);
  return holder.child.pid!;
}

function lockHolder(dataDir: string): LockHolder {
  return JSON.parse(readFileSync(join(dataDir, LOCK_FILE_NAME), 'utf8'));
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

const ORDER = { items: [{ sku: 'SKU-LOCK', quantity: 3, unit_price: 700 }], currency: 'EUR' };

async function call(portico: RunningPortico, method: 'GET' | 'POST', path: string, body?: unknown) {
  const agent = new Agent({ connect: { ca: readFileSync(portico.cacert), servername: 'localhost' } });
  try {
    const res = await request(`${portico.url}${path}`, {
      method,
      dispatcher: agent,
      headers: {
        authorization: `Bearer ${portico.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.statusCode, body: (await res.body.json()) as any };
  } finally {
    await agent.close();
  }
}

describe('npm start on a data dir already in use', () => {
  const dataDir = tempDataDir();
  let first: RunningPortico | undefined;
  let orderId = '';

  it('refuses a second start naming the first, which keeps serving', async () => {
    first = await startPortico(dataDir);
    running.push(first);
    const created = await call(first, 'POST', '/v1/orders', ORDER);
    expect(created.status).toBe(201);
    orderId = created.body.id;

    // Other ports (the kernel's), same data dir.
    const second = await runStartToExit(dataDir, 15_000);
    expect(second.code, second.output).not.toBe(0);
    expect(second.code, second.output).not.toBeNull();
    expect(second.seconds).toBeLessThan(10);
    expect(second.output).toContain(`in use by process ${first.child.pid} (npm start, since `);
    expect(second.output).toContain('PORTICO_DATA_DIR');
    expect(second.output).not.toMatch(/\n\s+at /); // one line, no stack trace

    const health = await request(`${first.adminUrl}/healthz`);
    expect(health.statusCode).toBe(200);
    await health.body.dump();
    const read = await call(first, 'GET', `/v1/orders/${orderId}`);
    expect(read.status).toBe(200);
  }, 120_000);

  it('recovers the lock of a killed start, with the data written before', async () => {
    expect(first).toBeDefined();
    await stopProcess(first!.child, 'SIGKILL');
    const next = await startPortico(dataDir);
    running.push(next);
    const read = await call(next, 'GET', `/v1/orders/${orderId}`);
    expect(read.status).toBe(200);
    expect(read.body.items).toEqual(ORDER.items);
    expect(await stopProcess(next.child, 'SIGINT')).toBe(0);
    // A clean stop leaves the data dir free.
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);
  }, 120_000);
});

describe('the data dir lock', () => {
  it('refuses npm start before it writes anything in the data dir', async () => {
    const dataDir = tempDataDir();
    const holder = await holdInOtherProcess(dataDir);
    const refused = await runStartToExit(dataDir, 15_000);
    expect(refused.code, refused.output).toBe(1);
    expect(refused.output).toContain(`"code":"ERR_DATA_DIR_IN_USE"`);
    expect(refused.output).toContain(`in use by process ${holder.child.pid} (lock contender, since `);
    // No pgdata, no keys, no certificate: only the holder's lock.
    expect(readdirSync(dataDir)).toEqual([LOCK_FILE_NAME]);
  }, 60_000);

  it('keeps any other opener of the embedded database out too', async () => {
    const dataDir = tempDataDir();
    const holder = await holdInOtherProcess(dataDir);
    const error = await startEmbeddedDatabase(dataDir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataDirInUseError);
    expect((error as DataDirInUseError).code).toBe('ERR_DATA_DIR_IN_USE');
    expect((error as DataDirInUseError).holder.pid).toBe(holder.child.pid);
    expect(readdirSync(dataDir)).toEqual([LOCK_FILE_NAME]);
  });

  it('lets exactly one of many processes take over a stale lock at once, round after round', async () => {
    const dataDir = tempDataDir();
    await leaveStaleLock(dataDir);
    for (let round = 0; round < 3; round++) {
      const go = join(dataDir, `go-${round}`);
      const contenders = Array.from({ length: 12 }, () => spawnContender(dataDir, go));
      children.push(...contenders.map((c) => c.child));
      await Promise.all(contenders.map((c) => c.ready));
      writeFileSync(go, '');
      const results = await Promise.all(contenders.map((c) => c.result));
      const winners = contenders.filter((_, i) => results[i] === 'won');
      expect(winners, results.join(', ')).toHaveLength(1);
      const winner = winners[0]!.child;
      expect(results.filter((r) => r === `in-use ${winner.pid}`)).toHaveLength(11);
      expect(lockHolder(dataDir).pid).toBe(winner.pid);
      // The winner dies holding the lock: the next round recovers it.
      await stopProcess(winner, 'SIGKILL');
      for (const c of contenders) await stopProcess(c.child, 'SIGKILL');
    }
    expect(readdirSync(dataDir).filter((name) => name.startsWith(`${LOCK_FILE_NAME}.`))).toEqual([]);
  }, 60_000);

  it('never removes a lock taken over after a contender judged the old one stale', async () => {
    // The interleaving the many-contenders test can only hope for, made certain: the lock is a
    // FIFO, so the late contender blocks reading the holder while the test swaps a live lock in,
    // then reads the stale record. A takeover that acts on that stale view deletes a live lock.
    const staleDir = tempDataDir();
    await leaveStaleLock(staleDir);
    const stale = readFileSync(join(staleDir, LOCK_FILE_NAME), 'utf8');
    const liveDir = tempDataDir();
    const live = await holdInOtherProcess(liveDir);
    const liveRecord = readFileSync(join(liveDir, LOCK_FILE_NAME), 'utf8');

    const dataDir = tempDataDir();
    const file = join(dataDir, LOCK_FILE_NAME);
    expect(spawnSync('mkfifo', [file]).status).toBe(0);
    const late = spawnContender(dataDir);
    children.push(late.child);
    const fifo = await open(file, 'w'); // returns once the contender has opened it to read
    writeFileSync(`${file}.live`, liveRecord);
    renameSync(`${file}.live`, file);
    await fifo.writeFile(stale);
    await fifo.close();

    expect(await late.result).toBe(`in-use ${live.child.pid}`);
    expect(readFileSync(file, 'utf8')).toBe(liveRecord);
  });

  it('recovers a stale lock whose reaper was itself killed mid-takeover', async () => {
    const dataDir = tempDataDir();
    const deadPid = await leaveStaleLock(dataDir);
    writeFileSync(
      join(dataDir, `${LOCK_FILE_NAME}.reap`),
      JSON.stringify({ ...lockHolder(dataDir), pid: deadPid }),
    );
    const lock = acquireDataDirLock(dataDir, { purpose: 'test' });
    expect(lockHolder(dataDir).pid).toBe(process.pid);
    expect(existsSync(join(dataDir, `${LOCK_FILE_NAME}.reap`))).toBe(false);
    lock.release();
  });

  it('treats a live pid with another start time, or from another boot, as a stale holder', async () => {
    const dataDir = tempDataDir();
    const alive = await holdInOtherProcess(dataDir);
    const file = join(dataDir, LOCK_FILE_NAME);
    const real = lockHolder(dataDir);
    expect(real.pid).toBe(alive.child.pid);
    for (const reused of [{ procStart: '1' }, { bootId: 'another-boot' }]) {
      writeFileSync(file, JSON.stringify({ ...real, ...reused }));
      const lock = acquireDataDirLock(dataDir, { purpose: 'test' });
      expect(lockHolder(dataDir).pid).toBe(process.pid);
      lock.release();
    }
    // The genuine record of that live process is respected.
    writeFileSync(file, JSON.stringify(real));
    expect(thrown(() => acquireDataDirLock(dataDir, { purpose: 'test' }))).toBeInstanceOf(DataDirInUseError);
  });

  it('is reentrant in one process and removed with the last hold', () => {
    const dataDir = tempDataDir();
    const outer = acquireDataDirLock(dataDir, { purpose: 'outer' });
    const inner = acquireDataDirLock(dataDir, { purpose: 'inner' });
    inner.release();
    inner.release(); // a second release of one hold is no second release
    expect(lockHolder(dataDir)).toMatchObject({ pid: process.pid, purpose: 'outer', hostname: hostname() });
    outer.release();
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);
  });

  it('is released only by its owner', async () => {
    const dataDir = tempDataDir();
    const mine = acquireDataDirLock(dataDir, { purpose: 'test' });
    // Someone removed our lock by hand and another process took the data dir.
    rmSync(join(dataDir, LOCK_FILE_NAME));
    const other = await holdInOtherProcess(dataDir);
    mine.release();
    expect(lockHolder(dataDir).pid).toBe(other.child.pid);
  });
});
