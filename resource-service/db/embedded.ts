/**
 * The embedded PostgreSQL of the zero-configuration start: PGlite, persisted in the data dir
 * and served over the PostgreSQL wire protocol by pglite-socket on 127.0.0.1, so the service
 * talks to it with the same `postgres` client and SQL as to a real server.
 *
 * PGlite has one backend: the client must use a single connection (`max: 1`), or the
 * protocol messages of two connections interleave and break.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

export interface EmbeddedDatabase {
  url: string;
  /** Pool size the client must use. */
  maxConnections: 1;
  stop(): Promise<void>;
}

export async function startEmbeddedDatabase(dataDir: string): Promise<EmbeddedDatabase> {
  // Loaded only when used: the WASM build is large, and servers with DATABASE_URL never need it.
  const [{ PGlite }, { PGLiteSocketServer }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite-socket'),
  ]);
  const directory = join(dataDir, 'pgdata');
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const db = await PGlite.create({ dataDir: directory });
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0 });
  await server.start();
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    maxConnections: 1,
    stop: async () => {
      await server.stop();
      await db.close();
    },
  };
}
