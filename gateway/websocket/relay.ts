/**
 * One WebSocket through the gateway: the client's end and the upstream's, each a ws socket
 * (ws parses, masks and closes on each hop), and every message relayed from one to the other
 * as it came (text or binary, whole). The route's bounds hold here: a message over
 * `maxMessageBytes` closes with 1009 (ws's own check while reading, before the message is
 * buffered whole), more than `maxMessagesPerSecond` from the client with 1008, no traffic for
 * `idleTimeoutMs` or an age of `maxLifetimeMs` with 1001 (RFC 6455 §7.4.1).
 */
import type WebSocket from 'ws';
import type { WebSocketRoute } from '../config/schema/websocket.ts';

/** How a relayed connection ended, for the metrics and the close record. */
export interface RelayOutcome {
  /** The close code that ended it: the side's that closed first, or the gateway's. */
  code: number;
  reason: string;
  /** Who closed first: the client, the upstream, or the gateway (a limit, a drain). */
  closedBy: 'client' | 'upstream' | 'gateway';
  /** Message payload bytes from the client to the upstream, and back. */
  bytesIn: number;
  bytesOut: number;
  messagesIn: number;
  messagesOut: number;
  durationMs: number;
}

/** What a running relay offers its owner. */
export interface Relay {
  /** Closes both ends with `code` (the gateway's own close: a drain, a limit). */
  close(code: number, reason: string): void;
  /** Cuts both ends at once, without a close handshake. */
  terminate(): void;
  readonly ended: Promise<RelayOutcome>;
}

/** Past this many bytes queued towards one side, the other side is not read until it drains. */
const HIGH_WATER_BYTES = 1 << 20;
/** Codes that may not be sent in a close frame (RFC 6455 §7.4.1): they only report. */
const UNSENDABLE = new Set([1005, 1006, 1015]);

type Limits = Pick<WebSocketRoute, 'maxMessagesPerSecond' | 'idleTimeoutMs' | 'maxLifetimeMs'>;

/** Told of every message relayed: its direction and payload bytes (the metrics). */
export type OnMessage = (direction: 'in' | 'out', bytes: number) => void;

export function startRelay(
  client: WebSocket,
  upstream: WebSocket,
  limits: Limits,
  onMessage: OnMessage = () => {},
): Relay {
  const startedMs = performance.now();
  const counts = { bytesIn: 0, bytesOut: 0, messagesIn: 0, messagesOut: 0 };
  let first: Pick<RelayOutcome, 'code' | 'reason' | 'closedBy'> | undefined;
  let window = { second: 0, messages: 0 };

  const gatewayClose = (code: number, reason: string) => {
    first ??= { code, reason, closedBy: 'gateway' };
    closeEnd(client, code, reason);
    closeEnd(upstream, code, reason);
  };
  const idle = setTimeout(
    () => gatewayClose(1001, `idle for ${limits.idleTimeoutMs} ms`),
    limits.idleTimeoutMs,
  );
  const lifetime = setTimeout(
    () => gatewayClose(1001, `connection lifetime of ${limits.maxLifetimeMs} ms reached`),
    limits.maxLifetimeMs,
  );
  const active = () => idle.refresh();

  client.on('message', (data: Buffer, isBinary: boolean) => {
    active();
    const second = Math.floor(Date.now() / 1000);
    if (second !== window.second) window = { second, messages: 0 };
    if (++window.messages > limits.maxMessagesPerSecond) {
      gatewayClose(1008, `more than ${limits.maxMessagesPerSecond} messages per second`);
      return;
    }
    counts.messagesIn += 1;
    counts.bytesIn += data.length;
    onMessage('in', data.length);
    forward(client, upstream, data, isBinary);
  });
  upstream.on('message', (data: Buffer, isBinary: boolean) => {
    active();
    counts.messagesOut += 1;
    counts.bytesOut += data.length;
    onMessage('out', data.length);
    forward(upstream, client, data, isBinary);
  });
  for (const end of [client, upstream]) {
    end.on('ping', active);
    end.on('pong', active);
    // A frame ws refused (too big, bad UTF-8, a protocol error): ws closes that end itself with
    // the code the error carries (1009, 1007, 1002); the other end is told the same.
    end.on('error', (error: Error & { code?: string }) => {
      const code = ERROR_CODES[error.code ?? ''] ?? 1011;
      const reason = end === client ? error.message : `upstream: ${error.message}`;
      first ??= { code, reason, closedBy: 'gateway' };
      closeEnd(end === client ? upstream : client, code, reason);
    });
  }

  // Paused since its handshake (upstream-dial.ts): every listener is in place now.
  upstream.resume();

  const closed = (end: WebSocket) =>
    new Promise<void>((resolve) =>
      end.once('close', (code: number, reason: Buffer) => {
        const side = end === client ? 'client' : 'upstream';
        first ??= { code, reason: reason.toString(), closedBy: side };
        // The other end hears the same code; an end that vanished (1006) is reported to the
        // client as 1014 (bad gateway) or to the upstream as 1001 (going away).
        const other = end === client ? upstream : client;
        if (UNSENDABLE.has(code)) closeEnd(other, end === client ? 1001 : 1014, '');
        else closeEnd(other, code, reason.toString());
        resolve();
      }),
    );
  const ended = Promise.all([closed(client), closed(upstream)]).then((): RelayOutcome => {
    clearTimeout(idle);
    clearTimeout(lifetime);
    return {
      ...(first ?? { code: 1006, reason: '', closedBy: 'gateway' }),
      ...counts,
      durationMs: Math.round(performance.now() - startedMs),
    };
  });
  return {
    close: gatewayClose,
    terminate() {
      client.terminate();
      upstream.terminate();
    },
    ended,
  };
}

/** The close code for a frame ws refused to read (its error codes, ws/lib/receiver.js). */
const ERROR_CODES: Record<string, number> = {
  WS_ERR_UNSUPPORTED_MESSAGE_LENGTH: 1009,
  WS_ERR_INVALID_UTF8: 1007,
};

/** Sends `data` on; while `to` has more than HIGH_WATER_BYTES queued, `from` is not read. */
function forward(from: WebSocket, to: WebSocket, data: Buffer, isBinary: boolean): void {
  if (to.readyState !== to.OPEN) return;
  to.send(data, { binary: isBinary }, () => {
    if (from.isPaused && to.bufferedAmount < HIGH_WATER_BYTES) from.resume();
  });
  if (to.bufferedAmount >= HIGH_WATER_BYTES) from.pause();
}

/** Starts the close handshake on an end that is still open (once: ws ignores a second close). */
function closeEnd(end: WebSocket, code: number, reason: string): void {
  if (end.readyState === end.CLOSED) return;
  if (end.readyState === end.CONNECTING) {
    end.terminate();
    return;
  }
  // A close reason is at most 123 bytes (RFC 6455 §5.5: a control frame's 125, less the code);
  // ours are ASCII, a peer's may not be: one that does not fit is left out.
  end.close(code, Buffer.byteLength(reason) <= 123 ? reason : '');
}
