/**
 * Live reload of everything in the config that may change without dropping a connection
 * (routes, upstreams, auth, CORS, deprecation, limits, compression, request ids, tracing): on
 * SIGHUP, when the file changes, and on `POST /config/reload`. The gateway builds a new pipeline
 * from it (build.ts) and swaps it in. What only a restart applies is named by key, never
 * claimed as reloaded, and the rest still applies. A file that fails validation, or a pipeline
 * that cannot be built, changes nothing; each problem is reported by its path in the file.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { GatewayConfig } from './schema/gateway.ts';
import { ConfigError, loadConfigFile } from './load.ts';
import { watchConfigPath } from './config-watch.ts';

/**
 * A build that failed, one line per problem: the builder's messages name their key where they
 * know it (`auth.jwt.jwksFile: cannot read ...`); several lines (the auth checks) stay several.
 */
function buildProblems(error: unknown): string[] {
  const lines = String((error as Error)?.message ?? error)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.endsWith(':'));
  return lines.length === 0 ? ['the new pipeline could not be built'] : lines;
}

/** What one reload did: what a command, the admin endpoint and the metrics report. */
export interface ReloadResult {
  /** `applied`: reloadable sections changed and now run; `unchanged`: none did; `refused`: invalid. */
  outcome: 'applied' | 'unchanged' | 'refused';
  /** The file's content digest (the first 12 hex digits of its SHA-256) that was read. */
  version: string;
  /** The sections reloaded (a new pipeline runs them). */
  applied: string[];
  /** The keys changed that only a restart applies, by path (`listener.hsts.maxAgeSeconds`). */
  needsRestart: string[];
  /** Why a reload was refused, one line each, by key path where there is one. */
  problems: string[];
  /** When it was tried (ISO 8601). */
  at: string;
  /** The result in one line, as the command prints it and the dashboard shows it. */
  message: string;
}

export interface ConfigReloader {
  /** Reloads now; reloads never overlap (one asked during another runs after it). */
  reload(trigger: string): Promise<ReloadResult>;
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

/**
 * What a reload cannot change, because the process holds it open: the listeners and their
 * sockets (`listener`: port, TLS files and settings, timeouts, limits the sockets enforce), the
 * admin listener (`admin`), the cache store whose stored answers were made under its settings
 * (`cache`), and the span exporter's connection (`tracing.otlp`). A reload keeps the running
 * values of these and names what changed; everything else builds a new pipeline. The
 * environment (ports, data dir, workers, Redis) is read once at start as well.
 */
const RESTART_ONLY = ['listener', 'admin', 'cache', 'tracing.otlp'] as const;

/** `next` with the running values of what only a restart changes: the config a reload builds. */
export function reloadable(started: GatewayConfig, next: GatewayConfig): GatewayConfig {
  return {
    ...next,
    listener: started.listener,
    admin: started.admin,
    cache: started.cache,
    tracing: { ...next.tracing, otlp: started.tracing.otlp },
  };
}

/** Top-level sections whose content differs. */
export function changedSections(before: GatewayConfig, after: GatewayConfig): (keyof GatewayConfig)[] {
  const keys = Object.keys(after) as (keyof GatewayConfig)[];
  return keys.filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]));
}

/** The keys of what only a restart changes that differ, as paths down to the leaf (or list). */
export function restartKeysChanged(started: GatewayConfig, next: GatewayConfig): string[] {
  return RESTART_ONLY.flatMap((path) => {
    const at = (config: GatewayConfig) =>
      path.split('.').reduce<unknown>((value, key) => (value as Record<string, unknown>)?.[key], config);
    return changedPaths(at(started), at(next), path);
  });
}

function changedPaths(before: unknown, after: unknown, path: string): string[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    return keys.flatMap((key) => changedPaths(before[key], after[key], `${path}.${key}`));
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [path];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The result in one line (problems, when refused, follow on lines of their own). */
export function describeResult(result: Omit<ReloadResult, 'message'>): string {
  const restart =
    result.needsRestart.length === 0 ? '' : `; needs a restart: ${result.needsRestart.join(', ')}`;
  if (result.outcome === 'refused') return `refused ${result.version}: the running config stays`;
  if (result.outcome === 'applied')
    return `applied ${result.version}: ${result.applied.join(', ')}${restart}`;
  return `unchanged ${result.version}: nothing that reloads has changed${restart}`;
}

/**
 * `running` is the config the gateway started with; `apply` builds and runs each validated
 * config whose reloadable sections changed (with the running values of what needs a restart).
 * An apply that throws (a JWKS file that cannot be read) refuses the reload: nothing changed.
 */
export function watchConfigFile(
  path: string,
  env: NodeJS.ProcessEnv,
  deps: {
    log: Logger;
    running: GatewayConfig;
    apply: (config: GatewayConfig) => Promise<void> | void;
    /** Told of every reload's result (the metrics). */
    onResult?: (result: ReloadResult) => void;
  },
): ConfigReloader {
  let applied = deps.running;
  // What was last reported as needing a restart, so a file event does not repeat it.
  let pendingRestart = '';
  // One reload at a time: two pipelines built from two reads must not race to be swapped in.
  let queue: Promise<unknown> = Promise.resolve();

  const reload = (trigger: string): Promise<ReloadResult> => {
    const run = queue.then(async () => {
      const outcome = await reloadOnce(trigger);
      const result = { ...outcome, at: new Date().toISOString(), message: describeResult(outcome) };
      deps.onResult?.(result);
      return result;
    });
    queue = run.catch(() => {});
    return run;
  };

  const refuse = (trigger: string, version: string, problems: string[], needsRestart: string[] = []) => {
    deps.log.error({ trigger, file: path, problems }, 'config reload refused; keeping the running config');
    return { outcome: 'refused' as const, version, applied: [], needsRestart, problems, at: '' };
  };

  const reloadOnce = async (trigger: string): Promise<Omit<ReloadResult, 'message'>> => {
    const version = configVersion(path);
    let read: GatewayConfig;
    try {
      read = loadConfigFile(path, env).config;
    } catch (error) {
      return refuse(
        trigger,
        version,
        error instanceof ConfigError ? [...error.problems] : [(error as Error).message],
      );
    }
    const config = reloadable(deps.running, read);
    const reloaded = changedSections(applied, config).sort();
    const needRestart = restartKeysChanged(deps.running, read);
    if (reloaded.length > 0) {
      try {
        await deps.apply(config);
      } catch (error) {
        return refuse(trigger, version, buildProblems(error), needRestart);
      }
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
      at: '',
    };
  };
  const watch = watchConfigPath(path, deps.log, () => void reload('file change'));

  return {
    reload,
    close() {
      watch.close();
    },
  };
}
