/**
 * A new data dir's embedded database is a copy of one template cluster, not a fresh initdb:
 * two data dirs share the template's system identifier, yet each keeps its own rows across a
 * restart. And PGlite runs with the smaller shared buffers that keep `npm start`'s memory down.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../resource-service/db/connect.ts';
import { startEmbeddedDatabase } from '../../resource-service/db/embedded.ts';

const dirs = [0, 1].map(() => mkdtempSync(join(tmpdir(), 'portico-embedded-template-')));
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Opens the embedded database of `dataDir`, runs `work` on one connection, closes both. */
async function withDatabase<T>(dataDir: string, work: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const db = await startEmbeddedDatabase(dataDir);
  const sql = connectDatabase({ url: db.url, max: db.maxConnections });
  try {
    return await work(sql);
  } finally {
    await sql.end();
    await db.stop();
  }
}

/** The first data dir may make the template: PGlite's initdb, tens of seconds on a busy machine. */
const INITDB_TIMEOUT_MS = 180_000;

describe('the embedded database of a new data dir', () => {
  it(
    'is a copy of the template: same system identifier, its own rows, kept across a restart',
    async () => {
      const [first, second] = dirs as [string, string];
      const identifier = (sql: postgres.Sql) =>
        sql`select system_identifier::text as id from pg_control_system()`.then((rows) => rows[0]?.['id']);
      const firstId = await withDatabase(first, async (sql) => {
        await sql`create table kept (value text)`;
        await sql`insert into kept values ('first data dir')`;
        return identifier(sql);
      });
      const secondId = await withDatabase(second, async (sql) => {
        const tables = await sql`select 1 from pg_tables where tablename = 'kept'`;
        expect(tables).toHaveLength(0);
        return identifier(sql);
      });
      expect(firstId).toEqual(expect.stringMatching(/^\d+$/));
      expect(secondId).toBe(firstId);
      const rows = await withDatabase(first, (sql) => sql`select value from kept`);
      expect(rows.map((row) => row['value'])).toEqual(['first data dir']);
    },
    INITDB_TIMEOUT_MS,
  );

  it('runs with 16MB of shared buffers, not the 128MB default', async () => {
    const [first] = dirs as [string];
    const setting = await withDatabase(first, (sql) => sql`show shared_buffers`);
    expect(setting[0]?.['shared_buffers']).toBe('16MB');
  });
});
