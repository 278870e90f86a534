/**
 * The embedded database served from a thread of its own, so that `npm start` opens it (PGlite's
 * WebAssembly compiled and PostgreSQL started inside it, about as much CPU as loading every
 * other module) on the second core while the main thread loads the gateway and the service.
 * The service reaches it as before, over its Unix socket (embedded.ts).
 *
 * The thread never takes the data dir's lock: the process holds it for the database's whole
 * life (a thread's own hold would release it, pid and all, when the thread ends). So the caller
 * must hold the lock before starting it and release it only after `stop()` resolved.
 */
import { Worker } from 'node:worker_threads';
import type { EmbeddedDatabase } from './embedded.ts';

/** What the thread says: the database serves its socket, or it could not open. */
export type ThreadMessage =
  { type: 'ready'; url: string } | { type: 'failed'; name: string; message: string };

export interface EmbeddedDatabaseThread {
  /** Resolves once the database serves its socket; rejects with the reason it could not open. */
  readonly ready: Promise<EmbeddedDatabase>;
  /** Closes the database (after its opening settled) and ends the thread; safe at any time. */
  stop(): Promise<void>;
}

const ENTRY = new URL(
  `./embedded-thread-entry${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`,
  import.meta.url,
);

/**
 * Starts the thread that opens `<dataDir>/pgdata`. `onLost` hears of a thread that ended or
 * failed after the database was ready: the service has lost its database.
 */
export function startEmbeddedDatabaseThread(
  dataDir: string,
  onLost: (error: Error) => void,
): EmbeddedDatabaseThread {
  const worker = new Worker(ENTRY, { workerData: { dataDir } });
  let stopping = false;
  let ready = false;
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
    if (!stopping) onLost(error);
  };
  function stop(): Promise<void> {
    if (!stopping) {
      stopping = true;
      worker.postMessage('stop');
    }
    return exited;
  }
  return { ready: opened, stop };
}
