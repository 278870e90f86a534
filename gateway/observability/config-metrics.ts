/**
 * The config a gateway runs, on `/metrics`: which file version (its content digest) and how the
 * last reload went, so an alert can fire on a reload refused or on replicas running different
 * versions, instead of an operator reading the log.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** The config running and the last reload, as the dashboard shows them. */
export interface ConfigState {
  version: string;
  lastReload?: {
    outcome: 'applied' | 'unchanged' | 'refused';
    version: string;
    at: string;
    /** The result in one line; a refusal's problems follow on lines of their own. */
    message: string;
  };
}

/** What a reload reports here (config/reload.ts's ReloadResult). */
interface ReloadOutcome {
  outcome: 'applied' | 'unchanged' | 'refused';
  version: string;
  at: string;
  message: string;
  problems: readonly string[];
}

export interface ConfigMetrics {
  state(): ConfigState;
  /** The version now running (replaces the previous one). */
  running(version: string): void;
  /** A reload's outcome; the version runs when it was applied. */
  reloaded(result: ReloadOutcome): void;
}

export function createConfigMetrics(registry: Registry, startVersion: string): ConfigMetrics {
  const info = new Gauge({
    name: 'portico_config_info',
    help: 'The config file version running (the first 12 hex digits of its SHA-256), as a label; always 1.',
    labelNames: ['version'],
    registers: [registry],
  });
  const reloads = new Counter({
    name: 'portico_config_reloads_total',
    help: 'Config reloads (SIGHUP, file change, npm run reload) by result: applied, unchanged, refused.',
    labelNames: ['result'],
    registers: [registry],
  });
  const lastSuccess = new Gauge({
    name: 'portico_config_last_reload_success',
    help: '1 when the last reload was valid (applied or unchanged), 0 when it was refused.',
    registers: [registry],
  });
  const lastTime = new Gauge({
    name: 'portico_config_last_reload_timestamp_seconds',
    help: 'When the last reload was tried (Unix seconds).',
    registers: [registry],
  });
  const state: ConfigState = { version: startVersion };
  const running = (version: string) => {
    info.reset();
    info.set({ version }, 1);
    state.version = version;
  };
  running(startVersion);
  lastSuccess.set(1);
  return {
    state: () => structuredClone(state),
    running,
    reloaded({ outcome, version, at, message, problems }) {
      state.lastReload = { outcome, version, at, message: [message, ...problems].join('\n') };
      reloads.inc({ result: outcome });
      lastSuccess.set(outcome === 'refused' ? 0 : 1);
      lastTime.set(Date.now() / 1000);
      if (outcome === 'applied') running(version);
    },
  };
}
