/**
 * Live reload of the parts of the config that may change without a restart (the rate-limit
 * policies): on SIGHUP and when the file changes. A file that fails validation changes
 * nothing; each problem is logged by its path in the file.
 */
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config.ts';
import { ConfigError, loadConfigFile } from './config.ts';

export interface ConfigReloader {
  reload(trigger: string): void;
  close(): void;
}

/** Editors write files in several steps; wait for them to settle. */
const SETTLE_MS = 200;

export function watchConfigFile(
  path: string,
  env: NodeJS.ProcessEnv,
  deps: { log: Logger; apply: (config: GatewayConfig) => void },
): ConfigReloader {
  let timer: NodeJS.Timeout | undefined;
  let lastText: string | undefined;

  const reload = (trigger: string) => {
    try {
      const { config } = loadConfigFile(path, env);
      const text = JSON.stringify(config.rateLimits);
      if (text === lastText && trigger !== 'SIGHUP') return;
      lastText = text;
      deps.apply(config);
      deps.log.info({ trigger, file: path }, 'config reloaded');
    } catch (error) {
      const problems = error instanceof ConfigError ? error.problems : [(error as Error).message];
      deps.log.error({ trigger, file: path, problems }, 'config reload refused; keeping the running config');
    }
  };

  // Watch the directory, not the file: an editor's rename-into-place replaces the inode.
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), (_event, name) => {
      if (name !== null && name !== basename(path)) return;
      clearTimeout(timer);
      timer = setTimeout(() => reload('file change'), SETTLE_MS);
    });
    watcher.on('error', (error) => deps.log.warn({ err: { message: error.message } }, 'config watch failed'));
  } catch (error) {
    deps.log.warn(
      { err: { message: (error as Error).message } },
      'cannot watch the config file; SIGHUP still reloads',
    );
  }

  return {
    reload,
    close() {
      clearTimeout(timer);
      watcher?.close();
    },
  };
}
