/**
 * Every core of one machine (`GATEWAY_WORKERS=N|auto`): N gateway processes sharing the
 * listeners through node:cluster, each with its own pools, caches and Redis connections.
 *
 * The primary only supervises: it starts the first worker alone (so that one process creates
 * what the data dir lacks: certificate, keys), then the others; replaces a worker that dies;
 * forwards SIGHUP; on SIGTERM lets every worker drain and exits when all have, or at its stop
 * deadline, when it kills the workers that remain and exits with status 1 (a worker stopped,
 * or stuck: issue 31, a stop always ends). A worker whose primary is gone stops too (its orphan
 * watch, worker-orphan-watch.ts, preloaded by the primary). A worker that
 * dies before it listens is a start that cannot work (a bad config): the primary stops all
 * rather than restart it forever. `/metrics`, answered by whichever worker the admin
 * connection reaches, aggregates all workers, collected by the primary (prom-client's
 * AggregatorRegistry: a sum, unless a metric names its own aggregation). `POST /config/reload`,
 * likewise, reloads every worker through the primary (cluster-reload.ts).
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { armExitDeadline } from '../shared/exit-deadline.ts';
import { redisTargetFromEnv } from '../shared/redis.ts';
import { PRIMARY_PID_VARIABLE, WORKER_SLOT_VARIABLE } from '../shared/worker-slot.ts';
import { RELOAD_ALL, reloadEveryWorker } from './cluster-reload.ts';
import { CONFIG_STATE_ALL, configStateOfEveryWorker } from './cluster-config-state.ts';
import { answerWorker, askPrimary } from './worker-channel.ts';

const READY = 'portico:worker-ready';
const METRICS_REQUEST = 'portico:metrics-request';
const METRICS_REPLY = 'portico:metrics-reply';
/** A worker that waits longer than this for the sum of all workers answers with an error. */
const METRICS_TIMEOUT_MS = 5000;

/** What a worker tells or asks its primary. */
type Message =
  | { type: typeof READY }
  | { type: typeof METRICS_REQUEST; id: number }
  | { type: typeof RELOAD_ALL.request; id: number }
  | { type: typeof CONFIG_STATE_ALL.request; id: number };

/** True in a process the primary started: it reports to the primary. */
export const isWorker = (): boolean => cluster.isWorker;

/** In a worker, once it listens: the primary starts the next ones. */
export function reportListening(): void {
  if (cluster.isWorker) process.send?.({ type: READY } satisfies Message);
}

/** A worker's side of `/metrics`: its registry offered to the primary, and the sum asked of it. */
export interface WorkerMetrics {
  /** What `/metrics` answers: the sum over every worker, collected by the primary. */
  text: () => Promise<string>;
  /** Offers this worker's registry to the primary's collection. */
  share(registry: Registry): void;
}

export function createWorkerMetrics(): WorkerMetrics {
  return {
    share(registry) {
      // Constructing one registers prom-client's worker side of the collection.
      new AggregatorRegistry();
      AggregatorRegistry.setRegistries([registry]);
    },
    text: askPrimary<string>(
      { request: METRICS_REQUEST, reply: METRICS_REPLY },
      METRICS_TIMEOUT_MS,
      "the primary did not answer with the workers' metrics",
    ),
  };
}

/**
 * The primary: starts `count` workers (this same entry script) and supervises them. A stop that
 * has not ended `stopDeadlineMs` after it began kills the workers that remain.
 */
export function runPrimary(
  count: number,
  env: NodeJS.ProcessEnv,
  log: Logger,
  stopDeadlineMs: number,
): { reload(): void } {
  if (!hasRedis(env))
    log.warn(
      { workers: count },
      `GATEWAY_WORKERS=${count} without Redis: rate limits, API-key revocations and cache invalidations are per worker — each of the ${count} workers admits a client up to the full limit`,
    );
  // The orphan watch first, before any other preload or module of the worker. The same file
  // as this one's: .ts from the source tree, .js once built.
  const watch = new URL(
    `./worker-orphan-watch${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`,
    import.meta.url,
  );
  cluster.setupPrimary({ execArgv: ['--import', watch.href, ...process.execArgv] });
  const primary = new Primary(count, log, stopDeadlineMs);
  cluster.on('exit', (worker, code, signal) => primary.onExit(worker, code, signal));
  for (const signal of ['SIGTERM', 'SIGINT'] as const)
    process.once(signal, () => {
      log.info({ signal, workers: workers().length }, 'shutting down the workers');
      primary.stopAll();
    });
  log.info({ workers: count }, 'starting gateway workers');
  primary.fork(1);
  return {
    reload() {
      for (const worker of workers()) worker.process.kill('SIGHUP');
    },
  };
}

const workers = (): Worker[] =>
  Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);

/** What the primary knows of its workers, and what it does when one reports or exits. */
class Primary {
  readonly #aggregator = new AggregatorRegistry();
  /** Workers that reported listening and have not exited. */
  readonly #ready = new Set<number>();
  /** Each worker's slot (1..count), by cluster worker id: a replacement takes the dead one's. */
  readonly #slots = new Map<number, number>();
  #allForked = false;
  #stopping = false;
  #exitCode = 0;

  readonly count: number;
  readonly log: Logger;
  readonly stopDeadlineMs: number;

  constructor(count: number, log: Logger, stopDeadlineMs: number) {
    this.count = count;
    this.log = log;
    this.stopDeadlineMs = stopDeadlineMs;
  }

  fork(slot: number): void {
    const worker = cluster.fork({
      [WORKER_SLOT_VARIABLE]: String(slot),
      [PRIMARY_PID_VARIABLE]: String(process.pid),
    });
    this.#slots.set(worker.id, slot);
    worker.on('message', (message: Message) => {
      if (message.type === READY) this.#onReady(worker);
      if (message.type === METRICS_REQUEST)
        answerWorker(worker, METRICS_REPLY, message.id, this.#aggregator.clusterMetrics());
      if (message.type === RELOAD_ALL.request)
        answerWorker(worker, RELOAD_ALL.reply, message.id, reloadEveryWorker(this.#live()));
      if (message.type === CONFIG_STATE_ALL.request)
        answerWorker(worker, CONFIG_STATE_ALL.reply, message.id, configStateOfEveryWorker(this.#live()));
    });
  }

  /** Drains every worker (they drain on SIGTERM) and exits when the last one has, or at the deadline. */
  stopAll(): void {
    if (!this.#stopping) this.#armStopDeadline();
    this.#stopping = true;
    for (const worker of workers()) worker.process.kill('SIGTERM');
    if (workers().length === 0) process.exit(this.#exitCode);
  }

  onExit(worker: Worker, code: number, signal: string): void {
    const started = this.#ready.delete(worker.id);
    const slot = this.#slots.get(worker.id) ?? 1;
    this.#slots.delete(worker.id);
    const facts = { pid: worker.process.pid, code, signal };
    if (this.#stopping) {
      if (code !== 0) this.#exitCode = 1;
      if (workers().length > 0) return;
      this.log.info({ exitCode: this.#exitCode }, 'gateway workers stopped');
      process.exit(this.#exitCode);
    } else if (!started) {
      this.log.fatal(facts, 'a gateway worker failed to start; stopping');
      this.#exitCode = 1;
      this.stopAll();
    } else {
      this.log.error(facts, 'gateway worker died; starting a replacement');
      this.fork(slot);
    }
  }

  /**
   * Each worker bounds its own stop (main.ts); this bound, a little later, catches the worker that
   * cannot: one stopped, or stuck where its own timers cannot run. Without it the primary, and the
   * listeners it holds, waited for that worker forever.
   */
  #armStopDeadline(): void {
    armExitDeadline(this.stopDeadlineMs, () => {
      const left = workers();
      this.log.error(
        { deadlineMs: this.stopDeadlineMs, pids: left.map((worker) => worker.process.pid) },
        'gateway workers past the stop deadline: killing them',
      );
      for (const worker of left) worker.process.kill('SIGKILL');
    });
  }

  /** The first worker listens alone (it creates what the data dir lacks), then the others start. */
  #onReady(worker: Worker): void {
    this.#ready.add(worker.id);
    if (!this.#allForked) {
      this.#allForked = true;
      for (let slot = 2; slot <= this.count; slot++) this.fork(slot);
    }
    if (this.#ready.size === this.count) this.log.info({ workers: this.count }, 'gateway workers listening');
  }

  /** The workers that listen and have not exited, each with its slot. */
  #live(): { worker: Worker; slot: number }[] {
    return workers()
      .filter((worker) => this.#ready.has(worker.id))
      .map((worker) => ({ worker, slot: this.#slots.get(worker.id) ?? 1 }));
  }
}

/** The one reading of the Redis variables (shared/redis.ts); an ambiguous pair refuses here, before forking. */
function hasRedis(env: NodeJS.ProcessEnv): boolean {
  return redisTargetFromEnv(env) !== undefined;
}
