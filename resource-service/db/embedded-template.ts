/**
 * A new embedded database without running initdb each time. PGlite's initdb runs PostgreSQL's
 * bootstrap in WebAssembly: some seven CPU-seconds and half a gigabyte of memory, for a cluster
 * that is the same for every data dir. So it runs once per installed PGlite version: that
 * cluster, closed cleanly, is kept as a template in `node_modules/.cache/portico/`, and a new
 * data dir's pgdata starts as a file copy of it (a stopped cluster's files are the cluster:
 * PostgreSQL's own template copy and base backups work on files too). The template and each
 * copy are made under a temporary name and renamed into place, so a start killed half-way
 * leaves no half cluster: the next start makes it again.
 *
 * Where the cache cannot be written (a read-only node_modules, say), PGlite runs initdb in the
 * data dir as before: slower, never wrong.
 */
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { renameSync, rmSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Opens (creating it if empty) a PGlite cluster in a directory; what the template needs of PGlite. */
export type OpenCluster = (dataDir: string) => Promise<{ close(): Promise<void> }>;

/** Where the template of the installed PGlite lives, or undefined outside a node_modules. */
function templateDir(): string | undefined {
  // …/node_modules/@electric-sql/pglite/dist/index.js
  const entry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'));
  const marker = `${sep}node_modules${sep}`;
  const at = entry.lastIndexOf(marker);
  if (at < 0) return undefined;
  const manifest = join(dirname(dirname(entry)), 'package.json');
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
  return join(entry.slice(0, at + marker.length), '.cache', 'portico', `pglite-${version}-pgdata`);
}

/** Runs PGlite's initdb in a temporary directory and renames the closed cluster to `target`. */
async function makeTemplate(target: string, open: OpenCluster): Promise<void> {
  mkdirSync(dirname(target), { recursive: true });
  const building = mkdtempSync(`${target}.building-`);
  try {
    const db = await open(building);
    await db.close();
    renameSync(building, target);
  } catch (error) {
    // Another start made it at the same moment: its template is as good as this one.
    if (!existsSync(join(target, 'PG_VERSION'))) throw error;
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
}

const isEmptyOrAbsent = (dir: string) => !existsSync(dir) || readdirSync(dir).length === 0;

/**
 * Makes `pgdata` a copy of the template when it has no cluster yet (absent or empty), making
 * the template first if this PGlite version has none. Returns whether it did; false leaves
 * pgdata as it was, for PGlite to run initdb in.
 */
export async function seedFromTemplate(pgdata: string, open: OpenCluster): Promise<boolean> {
  if (!isEmptyOrAbsent(pgdata)) return false;
  const template = templateDir();
  if (template === undefined) return false;
  try {
    if (!existsSync(join(template, 'PG_VERSION'))) await makeTemplate(template, open);
  } catch {
    return false;
  }
  const copying = `${pgdata}.copying`;
  rmSync(copying, { recursive: true, force: true });
  cpSync(template, copying, { recursive: true });
  chmodSync(copying, 0o700);
  // rename(2) replaces an empty directory: pgdata appears whole or not at all.
  renameSync(copying, pgdata);
  return true;
}
