/**
 * A server's drain, as both processes do it on SIGTERM: stop accepting connections, answer
 * the requests already received (with `Connection: close`), close keep-alive connections as
 * they fall idle, and after a deadline cut whatever still runs.
 */
import type { Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';

export interface HttpDrain {
  /** Counts a request in flight until its response closes; call it for every request. */
  track(res: ServerResponse): void;
  /** True once the drain began: answers then say `Connection: close`. */
  readonly draining: boolean;
  /** Resolves true when every request finished within `deadlineMs`, false when some were cut. */
  drain(deadlineMs: number): Promise<boolean>;
}

export function createHttpDrain(server: Server, log: Logger): HttpDrain {
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  let onIdle: (() => void) | undefined;

  function track(res: ServerResponse): void {
    inFlight.add(res);
    if (draining) res.setHeader('Connection', 'close');
    res.once('close', () => {
      inFlight.delete(res);
      if (!draining) return;
      // A response sent before the drain began left its keep-alive connection open.
      server.closeIdleConnections();
      if (inFlight.size === 0) onIdle?.();
    });
  }

  async function drain(deadlineMs: number): Promise<boolean> {
    draining = true;
    log.info(
      { inFlight: inFlight.size, deadlineMs },
      'draining: no new connections, finishing requests in flight',
    );
    for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
    // One turn of the event loop later: close() also closes idle connections, and one whose
    // request has arrived but is not read yet in this turn counts as idle, so a request sent
    // just before the signal would be reset rather than answered.
    const closed = new Promise<void>((resolve) => setImmediate(() => server.close(() => resolve())));
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      new Promise<true>((resolve) => {
        onIdle = () => resolve(true);
        if (inFlight.size === 0) onIdle();
      }),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), deadlineMs))),
    ]);
    clearTimeout(timer);
    if (!finished)
      log.warn({ inFlight: inFlight.size }, 'shutdown deadline reached: cutting the requests still running');
    server.closeAllConnections();
    await closed;
    return finished;
  }

  return {
    track,
    get draining() {
      return draining;
    },
    drain,
  };
}
