/**
 * Progress timeouts, as nginx's send_timeout and Envoy's stream idle timeout: an answer the
 * client does not take is ended once no byte has moved either way for `progressTimeoutMs`. On
 * HTTP/2 the stream is reset (RST_STREAM CANCEL) and the connection goes on; on HTTP/1.1 the
 * connection is closed. Refusals and 401s included: whatever the gateway has to send counts.
 *
 * Why: the other bounds all run while the gateway waits for the client to send (headers,
 * request, keep-alive). A client that sends a request and then never reads the answer (an
 * HTTP/2 INITIAL_WINDOW_SIZE of 0, a socket it stops reading) held its stream, its connection
 * and the answer's buffers for as long as it liked (issue 31).
 *
 * What counts as waiting on the client: answer bytes buffered that have not gone out (on
 * HTTP/2 also an answer ended but not yet sent, held by flow control). While the gateway waits
 * on its upstream, nothing is buffered and nothing is timed here (the proxy's timeouts are).
 * Progress is looked for by one sweep per listener, a quarter of the timeout apart at most a
 * second, rather than by a timer per write: a write per chunk is the hot path.
 */
import type { Http2Session, ServerHttp2Stream } from 'node:http2';
import { constants } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { Counter, type Registry } from 'prom-client';

const METRIC = 'portico_progress_timeouts_total';

/** One thing watched: how to read its progress, whether it waits on the client, how to end it. */
interface Watched {
  /** A value that changes whenever a byte moved either way. */
  mark(): string;
  waitingOnClient(): boolean;
  gone(): boolean;
  end(): void;
  protocol: 'http1' | 'http2';
  lastMark: string;
  lastProgress: number;
}

export interface ProgressTimeouts {
  /** Every TLS connection of the listener; HTTP/2 ones are watched stream by stream instead. */
  onConnection: (socket: TLSSocket) => void;
  onSession: (session: Http2Session) => void;
  /** Stops the sweep (the listener closed). */
  stop: () => void;
}

/** Watches the listener's connections and streams; `timeoutMs` 0 watches nothing. */
export function createProgressTimeouts(timeoutMs: number, registry: Registry): ProgressTimeouts {
  const ended =
    (registry.getSingleMetric(METRIC) as Counter<'protocol'> | undefined) ??
    new Counter({
      name: METRIC,
      help: 'Streams (HTTP/2) reset and connections (HTTP/1.1) closed because the client took nothing of the answer for listener.limits.progressTimeoutMs.',
      labelNames: ['protocol'],
      registers: [registry],
    });
  const watched = new Set<Watched>();
  /**
   * Watches `entry` until `closing` (its socket or stream) closes. Let go then, not at the next
   * sweep: an entry holds what it watches, and an HTTP/2 connection answers thousands of
   * streams a second, which stayed live up to a second each (about 2600 streams, 7.5 MiB of
   * live heap, in the bench's HTTP/2 hit row).
   */
  const watch = (entry: Omit<Watched, 'lastMark' | 'lastProgress'>, closing: NodeJS.EventEmitter) => {
    const watching: Watched = { ...entry, lastMark: entry.mark(), lastProgress: Date.now() };
    watched.add(watching);
    closing.once('close', () => watched.delete(watching));
  };
  const sweep = () => {
    const now = Date.now();
    for (const entry of watched) {
      if (entry.gone()) {
        watched.delete(entry);
        continue;
      }
      const mark = entry.mark();
      if (mark !== entry.lastMark || !entry.waitingOnClient()) {
        entry.lastMark = mark;
        entry.lastProgress = now;
      } else if (now - entry.lastProgress >= timeoutMs) {
        watched.delete(entry);
        ended.inc({ protocol: entry.protocol });
        entry.end();
      }
    }
  };
  const timer = timeoutMs > 0 ? setInterval(sweep, Math.min(1000, Math.max(50, timeoutMs / 4))) : undefined;
  timer?.unref();

  return {
    onConnection(socket) {
      if (timer === undefined || socket.alpnProtocol === 'h2') return;
      watch(
        {
          protocol: 'http1',
          mark: () =>
            `${socket.bytesRead}/${socket.bytesWritten}/${socket.writableLength}/${queuedInTls(socket)}`,
          waitingOnClient: () => socket.writableLength > 0 || queuedInTls(socket) > 0,
          gone: () => socket.destroyed,
          end: () => socket.destroy(),
        },
        socket,
      );
    },
    onSession(session) {
      if (timer === undefined) return;
      session.on('stream', (stream: ServerHttp2Stream) => watch(streamWatch(stream), stream));
    },
    stop() {
      clearInterval(timer);
      watched.clear();
    },
  };
}

/**
 * Bytes the TLS layer and the TCP socket beneath it still hold for the client. A large answer
 * written at once is taken whole by the TLS layer (its `writableLength` falls to 0 and
 * `bytesWritten` counts it all) and waits in the handles' own write queues, which only Node's
 * handles show: without them a client that reads nothing of a large answer looked like one
 * that had taken it all.
 */
function queuedInTls(socket: TLSSocket): number {
  const { _handle: tls, _parent: tcp } = socket as unknown as {
    _handle?: QueueHolder;
    _parent?: { _handle?: QueueHolder };
  };
  return (tls?.writeQueueSize ?? 0) + (tcp?._handle?.writeQueueSize ?? 0);
}

type QueueHolder = { writeQueueSize?: number } | null;

function streamWatch(stream: ServerHttp2Stream): Omit<Watched, 'lastMark' | 'lastProgress'> {
  return {
    protocol: 'http2',
    mark: () => {
      const state = stream.state;
      return `${stream.bufferSize}/${state.localWindowSize ?? ''}/${state.localClose ?? ''}/${state.remoteClose ?? ''}`;
    },
    // Answer bytes queued, or an answer ended that flow control keeps from going out.
    waitingOnClient: () =>
      stream.headersSent &&
      (stream.bufferSize > 0 || (stream.writableEnded && stream.state.localClose !== 1)),
    gone: () => stream.closed || stream.destroyed,
    end: () => stream.close(constants.NGHTTP2_CANCEL),
  };
}
