/**
 * Live reload of the parts of the config that may change without a restart (the rate-limit
 * policies): on SIGHUP and when the file changes. What changed elsewhere is named as needing a
 * restart, never claimed as reloaded. A file that fails validation changes nothing; each
 * problem is logged by its path in the file.
 */
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import type { GatewayConfig } from './schema/gateway.ts';
import { ConfigError, loadConfigFile } from './load.ts';

export interface ConfigReloader {
  reload(trigger: string): void;
  close(): void;
}

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

/** The sections applied by a reload; any other section needs a restart. */
const RELOADABLE: readonly (keyof GatewayConfig)[] = ['rateLimits'];

/** Top-level sections whose content differs. */
export function changedSections(before: GatewayConfig, after: GatewayConfig): (keyof GatewayConfig)[] {
  const keys = Object.keys(after) as (keyof GatewayConfig)[];
  return keys.filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]));
}

/**
 * `running` is the config the gateway started with; `apply` gets each validated config whose
 * reloadable sections changed.
 */
export function watchConfigFile(
  path: string,
  env: NodeJS.ProcessEnv,
  deps: { log: Logger; running: GatewayConfig; apply: (config: GatewayConfig) => void },
): ConfigReloader {
  let timer: NodeJS.Timeout | undefined;
  let applied = deps.running;
  // What was last reported as needing a restart, so a file event does not repeat it.
  let pendingRestart = '';

  const reload = (trigger: string) => {
    let config: GatewayConfig;
    try {
      config = loadConfigFile(path, env).config;
    } catch (error) {
      const problems = error instanceof ConfigError ? error.problems : [(error as Error).message];
      deps.log.error({ trigger, file: path, problems }, 'config reload refused; keeping the running config');
      return;
    }
    const changed = changedSections(applied, config);
    const reloaded = changed.filter((section) => RELOADABLE.includes(section));
    const needRestart = changedSections(deps.running, config).filter(
      (section) => !RELOADABLE.includes(section),
    );
    if (reloaded.length > 0) {
      deps.apply(config);
      applied = config;
      deps.log.info({ trigger, file: path, applied: reloaded }, 'config reloaded');
    } else if (trigger === 'SIGHUP') {
      deps.log.info({ trigger, file: path }, 'config reload: nothing that reloads has changed');
    }
    const restart = needRestart.join(', ');
    if (restart !== '' && (restart !== pendingRestart || trigger === 'SIGHUP')) {
      deps.log.warn(
        { trigger, file: path, needsRestart: needRestart },
        `config changed: needs a restart to apply: ${restart}`,
      );
    }
    pendingRestart = restart;
  };

  // Watch the directory, not the file: an editor's rename-into-place replaces the inode, and
  // the kubelet swaps a link beside it.
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), (_event, name) => {
      if (!mayChangeConfig(name, basename(path))) return;
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
