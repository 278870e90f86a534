/**
 * Live reload of the parts of the config that may change without a restart (the rate-limit
 * policies): on SIGHUP and when the file changes. What changed elsewhere is named as needing a
 * restart, never claimed as reloaded. A file that fails validation changes nothing; each
 * problem is logged by its path in the file.
 */
import { createHash } from 'node:crypto';
import { readFileSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import type { GatewayConfig } from './schema/gateway.ts';
import { ConfigError, loadConfigFile } from './load.ts';

/** What one reload did: what a command, the admin endpoint and the metrics report. */
export interface ReloadResult {
  /** `applied`: reloadable sections changed and now run; `unchanged`: none did; `refused`: invalid. */
  outcome: 'applied' | 'unchanged' | 'refused';
  /** The file's content digest (the first 12 hex digits of its SHA-256) that was read. */
  version: string;
  applied: string[];
  needsRestart: string[];
  problems: string[];
}

export interface ConfigReloader {
  reload(trigger: string): ReloadResult;
  close(): void;
}

/** The version of a config file: its content digest, short; `unreadable` when it cannot be read. */
export function configVersion(path: string): string {
  try {
    return createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 12);
  } catch {
    return 'unreadable';
  }
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
  deps: {
    log: Logger;
    running: GatewayConfig;
    apply: (config: GatewayConfig) => void;
    /** Told of every reload's result (the metrics). */
    onResult?: (result: ReloadResult) => void;
  },
): ConfigReloader {
  let timer: NodeJS.Timeout | undefined;
  let applied = deps.running;
  // What was last reported as needing a restart, so a file event does not repeat it.
  let pendingRestart = '';

  const reload = (trigger: string): ReloadResult => {
    const result = reloadOnce(trigger);
    deps.onResult?.(result);
    return result;
  };

  const reloadOnce = (trigger: string): ReloadResult => {
    const version = configVersion(path);
    let config: GatewayConfig;
    try {
      config = loadConfigFile(path, env).config;
    } catch (error) {
      const problems = error instanceof ConfigError ? error.problems : [(error as Error).message];
      deps.log.error({ trigger, file: path, problems }, 'config reload refused; keeping the running config');
      return { outcome: 'refused', version, applied: [], needsRestart: [], problems: [...problems] };
    }
    const changed = changedSections(applied, config);
    const reloaded = changed.filter((section) => RELOADABLE.includes(section));
    const needRestart = changedSections(deps.running, config).filter(
      (section) => !RELOADABLE.includes(section),
    );
    if (reloaded.length > 0) {
      deps.apply(config);
      applied = config;
      deps.log.info({ trigger, file: path, applied: reloaded, version }, 'config reloaded');
    } else if (trigger !== 'file change') {
      deps.log.info({ trigger, file: path, version }, 'config reload: nothing that reloads has changed');
    }
    const restart = needRestart.join(', ');
    if (restart !== '' && (restart !== pendingRestart || trigger !== 'file change')) {
      deps.log.warn(
        { trigger, file: path, needsRestart: needRestart },
        `config changed: needs a restart to apply: ${restart}`,
      );
    }
    pendingRestart = restart;
    return {
      outcome: reloaded.length > 0 ? 'applied' : 'unchanged',
      version,
      applied: reloaded,
      needsRestart: needRestart,
      problems: [],
    };
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
