/**
 * Versioned SQL migrations, applied at start-up.
 *
 * Files in migrations/ are named `NNN_name.sql` and applied in order, each in its own
 * transaction together with its row in `schema_migrations`. A session-level advisory lock
 * serialises services starting at the same time: the second waits, then finds nothing to do.
 * A file already applied whose text has changed stops the start-up: history is not rewritten.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import type { Sql } from 'postgres';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
const FILE_PATTERN = /^(\d{3})_[a-z0-9_]+\.sql$/;
/** Arbitrary, fixed: the advisory lock id every Portico service agrees on. */
const MIGRATION_LOCK_ID = 7_041_202_611;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export async function loadMigrations(directory: URL = MIGRATIONS_DIR): Promise<Migration[]> {
  const names = (await readdir(directory)).filter((name) => name.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const name of names) {
    const match = FILE_PATTERN.exec(name);
    if (match === null) throw new Error(`migration file name ${name} does not match NNN_name.sql`);
    const sql = await readFile(new URL(name, directory), 'utf8');
    migrations.push({
      version: Number(match[1]),
      name,
      sql,
      checksum: createHash('sha256').update(sql).digest('hex'),
    });
  }
  migrations.forEach((m, index) => {
    if (m.version !== index + 1) throw new Error(`migration ${m.name}: expected version ${index + 1}`);
  });
  return migrations;
}

/** Applies pending migrations; returns the names applied by this call. */
export async function migrate(sql: Sql, migrations?: Migration[]): Promise<string[]> {
  const all = migrations ?? (await loadMigrations());
  // reserve(): the advisory lock is held by a session, so lock, work and unlock must share
  // one connection.
  const connection = await sql.reserve();
  try {
    await connection`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    try {
      await connection`
        create table if not exists schema_migrations (
          version integer primary key,
          name text not null,
          checksum text not null,
          applied_at timestamptz not null default now()
        )`;
      const applied = new Map(
        (
          await connection<{ version: number; name: string; checksum: string }[]>`
          select version, name, checksum from schema_migrations`
        ).map((row) => [row.version, row]),
      );
      const done: string[] = [];
      for (const migration of all) {
        const previous = applied.get(migration.version);
        if (previous !== undefined) {
          if (previous.checksum !== migration.checksum) {
            throw new Error(
              `migration ${migration.name} was changed after it was applied; add a new migration instead`,
            );
          }
          continue;
        }
        // A reserved connection has no begin(): the transaction is spelled out.
        await connection`begin`;
        try {
          await connection.unsafe(migration.sql);
          await connection`insert into schema_migrations (version, name, checksum)
                            values (${migration.version}, ${migration.name}, ${migration.checksum})`;
          await connection`commit`;
        } catch (error) {
          await connection`rollback`;
          throw error;
        }
        done.push(migration.name);
      }
      return done;
    } finally {
      await connection`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`;
    }
  } finally {
    connection.release();
  }
}
