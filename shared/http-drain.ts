/**
 * A server's drain, as both processes do it on SIGTERM: stop accepting connections, answer
 * the requests already received (with `Connection: close`), close keep-alive connections as
 * they fall idle, and after a deadline cut whatever still runs.
 */
import type { Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
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
  // Every socket the server accepted: on a TLS server one still in its handshake is not an
  // HTTP connection yet, so `closeAllConnections` cannot see it, and a request it sends once
  // the handshake ends would hold `close` until the client lets go.
  const accepted = new Set<Duplex>();
  server.on('connection', (socket: Duplex) => {
    accepted.add(socket);
    socket.once('close', () => accepted.delete(socket));
  });
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
    const deadline = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), deadlineMs)));
    const finished = await Promise.race([
      new Promise<true>((resolve) => {
        onIdle = () => resolve(true);
        if (inFlight.size === 0) onIdle();
      }),
      deadline,
    ]);
    if (!finished)
      log.warn({ inFlight: inFlight.size }, 'shutdown deadline reached: cutting the requests still running');
    server.closeAllConnections();
    // What is left was accepted before the drain but became an HTTP connection only after the
    // step above: it gets what remains of the deadline, like any request in flight.
    const closedInTime = await Promise.race([closed.then(() => true), deadline]);
    if (!closedInTime) {
      log.warn(
        { connections: accepted.size },
        'shutdown deadline reached: cutting the connections still open',
      );
      for (const socket of accepted) socket.destroy();
      await closed;
    }
    clearTimeout(timer);
    return finished && closedInTime;
  }

  return {
    track,
    get draining() {
      return draining;
    },
    drain,
  };
}
