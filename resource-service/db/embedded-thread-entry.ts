/**
 * The embedded database's thread (embedded-thread.ts). It loads PGlite's code at once (no data
 * dir touched), opens the data dir's database when told to, says so, and on `stop` closes it
 * and ends. The process that started it holds the data dir's lock before it says `open`.
 */
import { parentPort } from 'node:worker_threads';
import { openEmbeddedDatabase, prepareEmbeddedDatabase, type EmbeddedDatabase } from './embedded.ts';
import type { ThreadMessage, ThreadRequest } from './embedded-thread.ts';

const port = parentPort;
if (port === null) throw new Error('embedded-thread-entry.ts runs only as a worker thread');

const prepared = prepareEmbeddedDatabase();
// A load that failed is told by the open that needs it.
prepared.catch(() => {});

let opening: Promise<EmbeddedDatabase | undefined> = Promise.resolve(undefined);

function open(dataDir: string): void {
  opening = openEmbeddedDatabase(dataDir, prepared).then(
    (db) => {
      port!.postMessage({ type: 'ready', url: db.url } satisfies ThreadMessage);
      return db;
    },
    (error: Error) => {
      port!.postMessage({ type: 'failed', name: error.name, message: error.message } satisfies ThreadMessage);
      return undefined;
    },
  );
}

port.on('message', (request: ThreadRequest) => {
  if (request === 'stop') {
    void opening
      .then((db) => db?.stop())
      // The thread ends either way; its exit code tells a close that failed.
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
    return;
  }
  open(request.dataDir);
});
