import { afterEach, describe, expect, it } from 'vitest';
import type { Sql } from 'postgres';
import { connectDatabase } from '../../resource-service/db/connect.ts';
import { loadMigrations, migrate } from '../../resource-service/db/migrate.ts';
import { createScratchDatabase, type ScratchDatabase } from '../support/databases.ts';

describe('migrations', () => {
  let scratch: ScratchDatabase | undefined;
  const clients: Sql[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.end()));
    await scratch?.drop();
  });

  it('two services migrating at once apply each migration exactly once', async () => {
    scratch = await createScratchDatabase();
    const a = connectDatabase({ url: scratch.url, max: 2 });
    const b = connectDatabase({ url: scratch.url, max: 2 });
    clients.push(a, b);
    const [appliedByA, appliedByB] = await Promise.all([migrate(a), migrate(b)]);
    const all = (await loadMigrations()).map((m) => m.name);
    // One of them did everything, the other waited on the lock and found nothing to do.
    expect([...appliedByA, ...appliedByB].sort()).toEqual(all);
    expect(await migrate(a)).toEqual([]);
    const rows = await a<{ version: number }[]>`select version from schema_migrations order by version`;
    expect(rows.map((r) => r.version)).toEqual(all.map((_, i) => i + 1));
  });

  it('refuses to start when an applied migration was edited', async () => {
    scratch = await createScratchDatabase();
    const sql = connectDatabase({ url: scratch.url, max: 1 });
    clients.push(sql);
    const migrations = await loadMigrations();
    await migrate(sql, migrations);
    const edited = migrations.map((m, i) => (i === 0 ? { ...m, checksum: 'changed' } : m));
    await expect(migrate(sql, edited)).rejects.toThrow(/changed after it was applied/);
  });

  it('sets a statement timeout on every connection', async () => {
    scratch = await createScratchDatabase();
    const sql = connectDatabase({ url: scratch.url, max: 1, statementTimeoutMs: 200 });
    clients.push(sql);
    await expect(sql`select pg_sleep(2)`).rejects.toMatchObject({ code: '57014' });
  });
});
