/**
 * The config a gateway runs, on `/metrics`: which file version (its content digest) and how the
 * last reload went, so an alert can fire on a reload refused or on replicas running different
 * versions, instead of an operator reading the log.
 *
 * Under GATEWAY_WORKERS `/metrics` aggregates the workers (workers.ts), by default by summing:
 * right for the reload counter (reloads of all workers), nonsense for these gauges (two workers
 * running one version would say 2, the time of the last reload would be twice a date). Each
 * gauge names its aggregation instead.
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
  /**
   * Under GATEWAY_WORKERS, every worker's own state (cluster-config-state.ts): the fields above
   * are those of the worker that answered the dashboard.
   */
  workers?: WorkerConfigState[];
  /** Why `workers` is missing under GATEWAY_WORKERS (the primary did not answer): one worker's view. */
  workersUnknown?: string;
}

/** One worker's config state, by its slot; `message` instead when it did not answer. */
export type WorkerConfigState = { worker: number; pid: number } & (
  Omit<ConfigState, 'workers' | 'workersUnknown'> | { message: string }
);

/** Where the dashboard reads the config state: at once, or asked of every worker. */
export type ConfigStateSource = () => ConfigState | undefined | Promise<ConfigState | undefined>;

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
    help: 'The config file version running (the first 12 hex digits of its SHA-256), as a label; always 1. Under GATEWAY_WORKERS one series per version some worker runs.',
    labelNames: ['version'],
    // Per version: 1 if any worker runs it. Two series at once mean the workers disagree.
    aggregator: 'max',
    registers: [registry],
  });
  const reloads = new Counter({
    name: 'portico_config_reloads_total',
    help: 'Config reloads (SIGHUP, file change, npm run reload) by result: applied, unchanged, refused. Under GATEWAY_WORKERS each worker counts its own: one reload of N workers counts N.',
    labelNames: ['result'],
    aggregator: 'sum',
    registers: [registry],
  });
  const lastSuccess = new Gauge({
    name: 'portico_config_last_reload_success',
    help: '1 when the last reload was valid (applied or unchanged), 0 when it was refused (under GATEWAY_WORKERS: by any worker).',
    // 0 as soon as one worker's last reload was refused: that worker runs an older config.
    aggregator: 'min',
    registers: [registry],
  });
  const lastTime = new Gauge({
    name: 'portico_config_last_reload_timestamp_seconds',
    help: 'When the last reload was tried (Unix seconds; under GATEWAY_WORKERS the latest of any worker).',
    aggregator: 'max',
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
