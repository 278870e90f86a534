/**
 * The pipeline a listener calls, swappable while it serves (a config reload): each request is
 * handled whole by the generation that was current when it arrived, new requests take the new
 * one at once, and a retired generation is closed (its upstream pools, key sources, health
 * check timers) when its last request has ended. Counting requests, not waiting a fixed time:
 * a slow upload or a long stream keeps its generation open exactly as long as it runs, and a
 * generation nobody uses any more is never left behind.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Told once that a request of a generation has ended: its response closed, finished or cut. */
export interface RequestEnd {
  ended(): void;
}

/** One pipeline built from one config: its handler, and what closes what it opened. */
export interface PipelineGeneration {
  /**
   * Handles one request, and tells `end` once its response has closed: from the close
   * listener the handler has anyway, rather than one more listener per request here.
   */
  handle(req: IncomingMessage, res: ServerResponse, end: RequestEnd): void;
  close(): Promise<void>;
}

export interface LiveHandler<G extends PipelineGeneration> {
  /** What the listener calls for each request. */
  readonly handle: (req: IncomingMessage, res: ServerResponse) => void;
  /** The generation new requests take. */
  current(): G;
  /** Generations retired but still finishing requests (besides the current one). */
  draining(): number;
  /**
   * Makes `next` current; the previous generation closes once its requests have ended.
   * Resolves when that close has run (or failed: `onCloseError` hears of it).
   */
  swap(next: G): Promise<void>;
  /** Closes the current generation and waits for those still draining (after the listener's drain). */
  close(): Promise<void>;
}

/** A generation with its count of requests in flight: each request's end is told to it. */
class Tracked<G> implements RequestEnd {
  readonly generation: G;
  inFlight = 0;
  retired = false;
  closed: Promise<void> | undefined = undefined;
  readonly whenClosed = settled();
  readonly #onIdle: (tracked: Tracked<G>) => void;

  constructor(generation: G, onIdle: (tracked: Tracked<G>) => void) {
    this.generation = generation;
    this.#onIdle = onIdle;
  }

  ended(): void {
    this.inFlight--;
    this.#onIdle(this);
  }
}

function settled(): { promise: Promise<void>; resolve(): void } {
  let resolve = () => {};
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

export function createLiveHandler<G extends PipelineGeneration>(
  first: G,
  onCloseError: (error: unknown) => void,
): LiveHandler<G> {
  const retiring = new Set<Tracked<G>>();
  const closeWhenIdle = (tracked: Tracked<G>): void => {
    if (!tracked.retired || tracked.inFlight > 0 || tracked.closed !== undefined) return;
    retiring.delete(tracked);
    tracked.closed = tracked.generation.close().catch(onCloseError);
    void tracked.closed.then(() => tracked.whenClosed.resolve());
  };

  const track = (generation: G) => new Tracked(generation, closeWhenIdle);
  let current = track(first);

  const retire = (tracked: Tracked<G>): Promise<void> => {
    tracked.retired = true;
    retiring.add(tracked);
    closeWhenIdle(tracked);
    return tracked.whenClosed.promise;
  };

  return {
    handle(req, res) {
      const tracked = current;
      tracked.inFlight++;
      tracked.generation.handle(req, res, tracked);
    },
    current: () => current.generation,
    draining: () => [...retiring].filter((tracked) => tracked.closed === undefined).length,
    swap(next) {
      const previous = current;
      current = track(next);
      return retire(previous);
    },
    async close() {
      const waits = [...retiring].map((tracked) => tracked.whenClosed.promise);
      waits.push(retire(current));
      await Promise.all(waits);
    },
  };
}
