/**
 * Watching a config file for changes, wherever its content really lives. Directories are
 * watched, not the file: an editor's rename-into-place replaces the inode, and the kubelet
 * swaps a link beside it. A file that is a link into another folder (`/etc/portico/portico.yaml`
 * → `/srv/configs/portico.yaml`) is edited there, so the target's folder is watched too, and
 * looked up again after every change, since the link may have been pointed elsewhere.
 */
import { realpathSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { basename, dirname, relative } from 'node:path';
import type { Logger } from 'pino';

/** Editors write files in several steps; wait for them to settle. */
const SETTLE_MS = 200;

/**
 * Whether a directory event may have changed the config file: its own name, or an entry of
 * the kubelet's atomic writer (a ConfigMap or Secret volume), which never writes the file but
 * swaps the `..data` link to a new `..<timestamp>` directory; the file is a link through it.
 */
export function mayChangeConfig(eventName: string | null, configName: string): boolean {
  return eventName === null || eventName === configName || eventName.startsWith('..');
}

/**
 * The real file behind `path` when it lies outside `path`'s own folder, else undefined: a link
 * within the folder (the kubelet's `..data/portico.yaml`) is seen by the folder's own watch.
 */
function linkedTargetOutside(path: string): string | undefined {
  try {
    const real = realpathSync(path);
    const within = relative(realpathSync(dirname(path)), dirname(real));
    return within === '' || !within.startsWith('..') ? undefined : real;
  } catch {
    return undefined;
  }
}

export interface ConfigWatch {
  close(): void;
}

/** Calls `onChange` once the file at `path`, or the file it links to, settles after a change. */
export function watchConfigPath(path: string, log: Logger, onChange: () => void): ConfigWatch {
  let timer: NodeJS.Timeout | undefined;
  let target: { file: string; watcher: FSWatcher | undefined } | undefined;

  const settle = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      followTarget();
      onChange();
    }, SETTLE_MS);
  };
  const watchFolder = (file: string): FSWatcher | undefined => {
    try {
      const watcher = watch(dirname(file), (_event, name) => {
        if (mayChangeConfig(name, basename(file))) settle();
      });
      watcher.on('error', (error) => log.warn({ err: { message: error.message } }, 'config watch failed'));
      return watcher;
    } catch (error) {
      log.warn(
        { err: { message: (error as Error).message } },
        'cannot watch the config file; SIGHUP still reloads',
      );
      return undefined;
    }
  };
  /** Watches the folder of the file the link points to now, if that changed. */
  const followTarget = (): void => {
    const file = linkedTargetOutside(path);
    if (file === target?.file) return;
    target?.watcher?.close();
    target = file === undefined ? undefined : { file, watcher: watchFolder(file) };
  };

  const own = watchFolder(path);
  followTarget();
  return {
    close() {
      clearTimeout(timer);
      own?.close();
      target?.watcher?.close();
    },
  };
}
