/**
 * `npm start` opens the embedded database in a thread of its own (embedded-thread.ts), beside
 * the main thread's module loading: the database answers through its socket as before, its
 * rows outlive the thread, a thread not yet told to open touches no data dir, a database that
 * cannot open says why, and `stop` ends the thread without touching the data dir's lock, which
 * the process holds.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../resource-service/db/connect.ts';
import { startEmbeddedDatabaseThread } from '../../resource-service/db/embedded-thread.ts';
import { acquireDataDirLock } from '../../shared/data-dir-lock.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function dataDir(prefix = 'portico-embedded-thread-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** The first data dir may make the template: PGlite's initdb, tens of seconds on a busy machine. */
const INITDB_TIMEOUT_MS = 180_000;

describe('the embedded database in its own thread', () => {
  it(
    'serves its socket, keeps its rows across threads, and leaves the lock to the process',
    async () => {
      const dir = dataDir();
      const lock = acquireDataDirLock(dir, { purpose: 'test' });
      const lost: Error[] = [];
      try {
        for (const round of [1, 2]) {
          const thread = startEmbeddedDatabaseThread();
          thread.open(dir, (error) => lost.push(error));
          const db = await thread.ready;
          const sql = connectDatabase({ url: db.url, max: db.maxConnections });
          if (round === 1) await sql`create table kept (value text)`;
          await sql`insert into kept values (${`round ${round}`})`;
          const rows = await sql`select value from kept order by value`;
          expect(rows.map((row) => row['value'])).toEqual(round === 1 ? ['round 1'] : ['round 1', 'round 2']);
          await sql.end();
          await thread.stop();
          // The thread's end released nothing: the process's lock is still there.
          expect(existsSync(lock.lockFile)).toBe(true);
        }
        expect(lost).toEqual([]);
      } finally {
        lock.release();
      }
    },
    INITDB_TIMEOUT_MS,
  );

  it('a thread never told to open touches no data dir, and stop ends it', async () => {
    const dir = dataDir();
    const thread = startEmbeddedDatabaseThread();
    // Long enough for it to have prepared PGlite: what it does before `open` is all done.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await thread.stop();
    expect(readdirSync(dir)).toEqual([]);
    await expect(thread.ready).rejects.toThrow(/thread ended/);
  });

  it('a database that cannot open rejects `ready` with the reason, and stop still ends', async () => {
    // A socket path longer than a Unix socket allows: refused before pgdata is opened.
    const dir = dataDir(`portico-embedded-thread-${'x'.repeat(120)}-`);
    const lock = acquireDataDirLock(dir, { purpose: 'test' });
    try {
      const thread = startEmbeddedDatabaseThread();
      thread.open(dir, () => {});
      await expect(thread.ready).rejects.toThrow(/longer than a Unix socket allows/);
      await thread.stop();
    } finally {
      lock.release();
    }
  });
});
