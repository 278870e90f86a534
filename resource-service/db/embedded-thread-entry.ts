/**
 * The embedded database's thread (embedded-thread.ts): opens the data dir's database, says so,
 * and on `stop` closes it and ends. The process that started it holds the data dir's lock.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openEmbeddedDatabase, type EmbeddedDatabase } from './embedded.ts';
import type { ThreadMessage } from './embedded-thread.ts';

const port = parentPort;
if (port === null) throw new Error('embedded-thread-entry.ts runs only as a worker thread');
const { dataDir } = workerData as { dataDir: string };

const opening: Promise<EmbeddedDatabase | undefined> = openEmbeddedDatabase(dataDir).then(
  (db) => {
    port.postMessage({ type: 'ready', url: db.url } satisfies ThreadMessage);
    return db;
  },
  (error: Error) => {
    port.postMessage({ type: 'failed', name: error.name, message: error.message } satisfies ThreadMessage);
    return undefined;
  },
);

port.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  void opening
    .then((db) => db?.stop())
    // The thread ends either way; its exit code tells a close that failed.
    .then(
      () => process.exit(0),
      () => process.exit(1),
    );
});
