/**
 * A process that tries to take a data dir's lock, for tests: `node lock-contender.ts DATA_DIR
 * [GO_FILE]`. Prints `ready`, waits until GO_FILE exists (so that many contenders try at the
 * same moment), then prints `won`, `in-use <holder pid>` or `error <message>`. A winner holds
 * the lock until its stdin closes, then releases it and exits.
 */
import { existsSync } from 'node:fs';
import { acquireDataDirLock, DataDirInUseError } from '../../../shared/data-dir-lock.ts';

const [dataDir, goFile] = process.argv.slice(2);
if (dataDir === undefined) throw new Error('usage: lock-contender.ts DATA_DIR [GO_FILE]');

process.stdout.write('ready\n');
// Spinning, not sleeping or fs.watch: all contenders leave the loop within microseconds, and
// on a machine with fewer cores than contenders the scheduler preempts them mid-acquire, which
// is where a takeover that is not race-free lets two win.
while (goFile !== undefined && !existsSync(goFile));

try {
  const lock = acquireDataDirLock(dataDir, { purpose: 'lock contender' });
  process.stdout.write('won\n');
  process.stdin.resume();
  process.stdin.once('end', () => {
    lock.release();
    process.exit(0);
  });
} catch (error) {
  if (error instanceof DataDirInUseError) process.stdout.write(`in-use ${error.holder.pid}\n`);
  else process.stdout.write(`error ${(error as Error).message}\n`);
  process.exit(0);
}
