/**
 * The pipeline a listener calls, swappable while it serves (a config reload): each request is
 * handled whole by the generation that was current when it arrived, new requests take the new
 * one at once, and a retired generation is closed (its upstream pools, key sources, health
 * check timers) when its last request has ended. Counting requests, not waiting a fixed time:
 * a slow upload or a long stream keeps its generation open exactly as long as it runs, and a
 * generation nobody uses any more is never left behind.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** One pipeline built from one config: its handler, and what closes what it opened. */
export interface PipelineGeneration {
  handle(req: IncomingMessage, res: ServerResponse): void;
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

interface Tracked<G> {
  generation: G;
  inFlight: number;
  retired: boolean;
  closed?: Promise<void>;
  whenClosed: { promise: Promise<void>; resolve(): void };
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
  const track = (generation: G): Tracked<G> => ({
    generation,
    inFlight: 0,
    retired: false,
    whenClosed: settled(),
  });
  let current = track(first);
  const retiring = new Set<Tracked<G>>();

  const closeWhenIdle = (tracked: Tracked<G>): void => {
    if (!tracked.retired || tracked.inFlight > 0 || tracked.closed !== undefined) return;
    retiring.delete(tracked);
    tracked.closed = tracked.generation.close().catch(onCloseError);
    void tracked.closed.then(() => tracked.whenClosed.resolve());
  };

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
      // 'close' ends every response, finished or cut, on HTTP/1.1 and HTTP/2 alike.
      res.once('close', () => {
        tracked.inFlight--;
        closeWhenIdle(tracked);
      });
      tracked.generation.handle(req, res);
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
