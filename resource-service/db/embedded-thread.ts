/**
 * The embedded database served from a thread of its own, so that `npm start` opens it (PGlite's
 * WebAssembly compiled and PostgreSQL started inside it, about as much CPU as loading every
 * other module) on the second core while the main thread loads the gateway and the service.
 * The service reaches it as before, over its Unix socket (embedded.ts).
 *
 * The thread starts before anything is checked and loads PGlite's code at once (no data dir
 * touched), so that its own start and that load overlap the main thread's checks; it opens
 * pgdata only when `open` names the data dir. (Compiling PGlite's WebAssembly and reading its
 * file bundle before `open` as well was measured too: no faster on two cores, 12 MiB more.)
 *
 * The thread never takes the data dir's lock: the process holds it for the database's whole
 * life (a thread's own hold would release it, pid and all, when the thread ends). So the caller
 * must hold the lock before `open` and release it only after `stop()` resolved.
 */
import { Worker } from 'node:worker_threads';
import type { EmbeddedDatabase } from './embedded.ts';

/** What the thread says: the database serves its socket, or it could not open. */
export type ThreadMessage =
  { type: 'ready'; url: string } | { type: 'failed'; name: string; message: string };

/** What the thread is told: open the data dir's database, or end. */
export type ThreadRequest = { type: 'open'; dataDir: string } | 'stop';

export interface EmbeddedDatabaseThread {
  /**
   * Opens `<dataDir>/pgdata`, once, with the data dir's lock held. `onLost` hears of a thread
   * that ended or failed after the database was ready: the service has lost its database.
   */
  open(dataDir: string, onLost: (error: Error) => void): void;
  /** Resolves once the database serves its socket; rejects with the reason it could not open. */
  readonly ready: Promise<EmbeddedDatabase>;
  /** Closes the database (after its opening settled) and ends the thread; safe at any time. */
  stop(): Promise<void>;
}

const ENTRY = new URL(
  `./embedded-thread-entry${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`,
  import.meta.url,
);

/** Starts the thread, which loads PGlite's code and waits for `open`. */
export function startEmbeddedDatabaseThread(): EmbeddedDatabaseThread {
  const worker = new Worker(ENTRY);
  let stopping = false;
  let ready = false;
  let onLost: ((error: Error) => void) | undefined;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  const opened = new Promise<EmbeddedDatabase>((resolve, reject) => {
    worker.on('message', (message: ThreadMessage) => {
      if (message.type === 'failed') {
        reject(Object.assign(new Error(message.message), { name: message.name }));
        return;
      }
      ready = true;
      resolve({ url: message.url, maxConnections: 1, stop });
    });
    worker.on('error', (error: Error) => (ready ? lose(error) : reject(error)));
    worker.on('exit', (code) => {
      const error = new Error(`the embedded database's thread ended (code ${code})`);
      if (!ready) reject(error);
      else if (!stopping) lose(error);
    });
  });
  // A start that failed elsewhere stops the thread before anyone awaited it.
  opened.catch(() => {});
  const lose = (error: Error) => {
    if (!stopping) onLost?.(error);
  };
  function open(dataDir: string, lost: (error: Error) => void): void {
    onLost = lost;
    worker.postMessage({ type: 'open', dataDir } satisfies ThreadRequest);
  }
  function stop(): Promise<void> {
    if (!stopping) {
      stopping = true;
      worker.postMessage('stop' satisfies ThreadRequest);
    }
    return exited;
  }
  return { open, ready: opened, stop };
}
