/**
 * The embedded PostgreSQL of the zero-configuration start: PGlite, persisted in the data dir
 * and served over the PostgreSQL wire protocol by pglite-socket on 127.0.0.1, so the service
 * talks to it with the same `postgres` client and SQL as to a real server.
 *
 * PGlite has one backend: the client must use a single connection (`max: 1`), or the
 * protocol messages of two connections interleave and break.
 *
 * PGlite does not lock its files against a second process, and two writers on one pgdata lose
 * data, so it opens only under the data dir's lock (shared/data-dir-lock.ts).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { acquireDataDirLock } from '../../shared/data-dir-lock.ts';

export interface EmbeddedDatabase {
  url: string;
  /** Pool size the client must use. */
  maxConnections: 1;
  stop(): Promise<void>;
}

/**
 * Opens (or creates) the embedded database in `<dataDir>/pgdata` and serves it on a free
 * loopback port. Throws DataDirInUseError, before touching pgdata, when another process holds
 * the data dir; a caller that holds it already (npm start) simply takes a second hold.
 */
export async function startEmbeddedDatabase(dataDir: string): Promise<EmbeddedDatabase> {
  const lock = acquireDataDirLock(dataDir, { purpose: 'embedded PostgreSQL' });
  try {
    // Loaded only when used: the WASM build is large, and servers with DATABASE_URL never need it.
    const [{ PGlite }, { PGLiteSocketServer }] = await Promise.all([
      import('@electric-sql/pglite'),
      import('@electric-sql/pglite-socket'),
    ]);
    const directory = join(dataDir, 'pgdata');
    mkdirSync(directory, { recursive: true, mode: 0o700 });
    const db = await PGlite.create({ dataDir: directory });
    const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0 });
    // Closed before the lock is released below: pgdata must have no writer once it is free.
    await server.start().catch(async (error: unknown) => {
      await db.close();
      throw error;
    });
    return {
      url: `postgres://postgres@${server.getServerConn()}/postgres`,
      maxConnections: 1,
      stop: async () => {
        try {
          await server.stop();
          await db.close();
        } finally {
          lock.release();
        }
      },
    };
  } catch (error) {
    lock.release();
    throw error;
  }
}
