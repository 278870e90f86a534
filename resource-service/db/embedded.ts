/**
 * The embedded PostgreSQL of the zero-configuration start: PGlite, persisted in the data dir
 * and served over the PostgreSQL wire protocol by pglite-socket, so the service talks to it
 * with the same `postgres` client and SQL as to a real server.
 *
 * PGlite has no authentication: whoever reaches its socket is the superuser. So it is served on
 * a Unix socket in a directory of the data dir that only this user may enter (mode 0700, the
 * socket 0600), never on a TCP port, which every local user can reach.
 *
 * PGlite has one backend: the client must use a single connection (`max: 1`), or the
 * protocol messages of two connections interleave and break.
 *
 * PGlite does not lock its files against a second process, and two writers on one pgdata lose
 * data, so it opens only under the data dir's lock (shared/data-dir-lock.ts).
 */
import { chmodSync, lstatSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import type { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { acquireDataDirLock } from '../../shared/data-dir-lock.ts';
import { seedFromTemplate } from './embedded-template.ts';

export interface EmbeddedDatabase {
  /** libpq form for a Unix socket: `postgres://postgres@localhost/postgres?host=<socket dir>`. */
  url: string;
  /** Pool size the client must use. */
  maxConnections: 1;
  stop(): Promise<void>;
}

/**
 * PostgreSQL's default of 128MB of shared buffers is most of PGlite's memory (its WebAssembly
 * heap holds them): 16MB, PostgreSQL's default before 9.3, holds the demo data and a developer's
 * rows many times over, and takes about 120 MB off the process. The rest of PGlite's defaults
 * stay.
 */
const SHARED_BUFFERS = '16MB';

/** The directory of the socket, and libpq's name for a server's socket in it (`psql -h DIR`). */
const SOCKET_DIR = 'pgsocket';
const SOCKET_NAME = '.s.PGSQL.5432';
/** A socket path must fit sockaddr_un.sun_path: 108 bytes on Linux, 104 on macOS, NUL included. */
const MAX_SOCKET_PATH_BYTES = 103;

/**
 * `<dataDir>/pgsocket/.s.PGSQL.5432`, in a directory that is this user's and mode 0700 even if
 * the data dir was made by hand with a looser mode; a socket left there by a killed process is
 * removed (the caller holds the data dir's lock, so no live server owns it).
 */
function privateSocketPath(dataDir: string): { dir: string; path: string } {
  const dir = resolve(dataDir, SOCKET_DIR);
  const path = join(dir, SOCKET_NAME);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
    throw new Error(
      `the embedded database's socket path ${path} is longer than a Unix socket allows (${MAX_SOCKET_PATH_BYTES} bytes): choose a shorter PORTICO_DATA_DIR`,
    );
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // lstat: a symlink planted here would point the socket, and its mode, somewhere else.
  const stat = lstatSync(dir);
  const uid = process.getuid?.();
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) {
    throw new Error(`${dir} must be a directory owned by this user`);
  }
  chmodSync(dir, 0o700);
  rmSync(path, { force: true });
  return { dir, path };
}

/**
 * Opens (or creates) the embedded database in `<dataDir>/pgdata` and serves it on a Unix
 * socket in `<dataDir>/pgsocket`. Throws DataDirInUseError, before touching pgdata, when
 * another process holds the data dir; a caller that holds it already (npm start) simply takes
 * a second hold.
 */
export async function startEmbeddedDatabase(dataDir: string): Promise<EmbeddedDatabase> {
  const lock = acquireDataDirLock(dataDir, { purpose: 'embedded PostgreSQL' });
  try {
    const db = await openEmbeddedDatabase(dataDir);
    return {
      ...db,
      stop: async () => {
        try {
          await db.stop();
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

/**
 * PGlite's code, loaded: all an open needs but the data dir. It touches no data dir, so
 * `npm start`'s thread loads it while the main thread still checks the environment and takes
 * the lock.
 */
export interface PreparedPglite {
  PGlite: typeof PGlite;
  PGLiteSocketServer: typeof PGLiteSocketServer;
}

export async function prepareEmbeddedDatabase(): Promise<PreparedPglite> {
  // Loaded only when used: the WASM build is large, and servers with DATABASE_URL never need it.
  const [pglite, socket] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite-socket'),
  ]);
  return { PGlite: pglite.PGlite, PGLiteSocketServer: socket.PGLiteSocketServer };
}

/**
 * `startEmbeddedDatabase` without the data dir's lock, for a caller that holds it for the
 * database's whole life: the thread that serves it under `npm start` (embedded-thread.ts),
 * whose process took the lock before asking it to open. pgdata must never be opened otherwise.
 */
export async function openEmbeddedDatabase(
  dataDir: string,
  prepared: Promise<PreparedPglite> = prepareEmbeddedDatabase(),
): Promise<EmbeddedDatabase> {
  const { PGlite, PGLiteSocketServer } = await prepared;
  const directory = join(dataDir, 'pgdata');
  const startParams = [...PGlite.defaultStartParams, '-c', `shared_buffers=${SHARED_BUFFERS}`];
  const open = (dir: string) => PGlite.create({ dataDir: dir, startParams });
  await seedFromTemplate(directory, open);
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const socket = privateSocketPath(dataDir);
  const db = await open(directory);
  const server = new PGLiteSocketServer({ db, path: socket.path });
  // Closed before the caller's lock is released: pgdata must have no writer once it is free.
  await server.start().catch(async (error: unknown) => {
    await db.close();
    throw error;
  });
  // The directory already keeps other users out; the socket's own mode says so too.
  chmodSync(socket.path, 0o600);
  return {
    url: `postgres://postgres@localhost/postgres?host=${encodeURIComponent(socket.dir)}`,
    maxConnections: 1,
    stop: async () => {
      await server.stop();
      await db.close();
    },
  };
}
