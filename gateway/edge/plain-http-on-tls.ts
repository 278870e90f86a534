/**
 * Plain HTTP sent to the HTTPS port (`curl http://host:8443/`): TLS would only see a bad
 * record and drop the connection, which leaves the operator guessing. The first bytes of each
 * connection are looked at before TLS takes it: a TLS record (0x16, a handshake) goes on to TLS
 * untouched, and an HTTP request line (an uppercase method) is answered with a 400 that says to
 * use HTTPS, as Go's servers do (nginx answers 497). Anything else goes to TLS, which refuses it
 * as before. A client that sends nothing is cut at the handshake deadline, as TLS would.
 */
import type { Socket } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';
import { NOSNIFF } from './raw-refusal.ts';

const TLS_HANDSHAKE_RECORD = 0x16;
/** How long an answered client may take to close before the socket is destroyed. */
const LINGER_MS = 1000;

/**
 * Puts the look at the first bytes in front of the TLS server's own connection listener
 * (node:tls registers it when the server is made; it is moved, not copied).
 */
export function answerPlainHttp(
  server: TlsServer,
  options: { handshakeTimeoutMs: number; log: Logger },
): void {
  const tlsListeners = server.listeners('connection') as ((socket: Socket) => void)[];
  for (const listener of tlsListeners) server.removeListener('connection', listener);
  server.prependListener('connection', (socket: Socket) => {
    const ignoreError = () => {};
    socket.on('error', ignoreError);
    const timer = setTimeout(() => socket.destroy(), options.handshakeTimeoutMs);
    socket.once('close', () => clearTimeout(timer));
    socket.once('data', (chunk: Buffer) => {
      clearTimeout(timer);
      if (chunk[0] !== TLS_HANDSHAKE_RECORD && isHttpRequest(chunk)) {
        options.log.debug(
          { remoteAddress: socket.remoteAddress },
          'plain HTTP on the HTTPS port: answered 400',
        );
        socket.end(plainHttpAnswer(chunk));
        setTimeout(() => socket.destroy(), LINGER_MS).unref();
        return;
      }
      // Given back, paused, for TLS to read as if nothing had looked.
      socket.pause();
      socket.unshift(chunk);
      socket.off('error', ignoreError);
      for (const listener of tlsListeners) listener.call(server, socket);
    });
  });
}

/** An uppercase method and a space: what every HTTP/1.x request line starts with. */
function isHttpRequest(chunk: Buffer): boolean {
  return /^[A-Z]{3,10} /.test(chunk.subarray(0, 12).toString('latin1'));
}

/** The 400, naming the https:// URL the client meant when its Host and target are plain. */
function plainHttpAnswer(chunk: Buffer): string {
  const text = chunk.toString('latin1');
  const target = /^[A-Z]+ (\/[\x21-\x7e]*) HTTP\/1\.[01]\r\n/.exec(text)?.[1];
  const host = /\r\nhost:[ \t]*([A-Za-z0-9.:[\]-]+)[ \t]*\r\n/i.exec(text)?.[1];
  const url = target !== undefined && host !== undefined ? `https://${host}${target}` : 'https://';
  const body = `This port speaks HTTPS, not plain HTTP: use ${url}\n`;
  return [
    'HTTP/1.1 400 Bad Request',
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `${NOSNIFF.name}: ${NOSNIFF.value}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}
