/**
 * An upstream that poisons its keep-alive connections: after a real answer it writes one more,
 * unsolicited, a copy of the answer it just gave (Portico-Exchange-Id echo included, as a
 * buggy service that answers twice would). A gateway that takes whatever comes next on a
 * pooled connection for the answer to its next request hands that request someone else's body.
 *
 * How the stray answer is timed is the case, the first path segment:
 * - `/next/<marker>`: written just before the real answer to the next request on the same
 *   connection, so that it always arrives after the gateway sent that request (deterministic),
 *   or 20 ms after the answer if no request came by then;
 * - `/soon/<marker>`: written 0 to 3 ms after the real answer (the race seen under traffic);
 * - `/late/<marker>`: written 30 ms after, while the connection sits idle in the pool;
 * - `/good/<marker>`: no stray answer.
 * Every real answer's body is `{"marker":"<marker>"}`, so that the client can tell whose it is.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface PoisoningUpstream {
  url: string;
  /** Connections accepted so far. */
  connections(): number;
  /** Stray answers written so far. */
  strays(): number;
  close(): Promise<void>;
}

const EXCHANGE_HEADER = 'portico-exchange-id';

function answer(marker: string, exchangeId: string | undefined): string {
  const body = JSON.stringify({ marker });
  const echo = exchangeId === undefined ? '' : `Portico-Exchange-Id: ${exchangeId}\r\n`;
  return (
    `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n${echo}` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

export async function startPoisoningUpstream(): Promise<PoisoningUpstream> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  let strays = 0;
  const stray = (socket: Socket, raw: string) => {
    if (socket.destroyed) return;
    strays++;
    socket.write(raw);
  };
  const server: Server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffered = '';
    // The copy owed to this connection by a `/next/` answer, written before its next answer.
    let owed: string | undefined;
    let owedTimer: NodeJS.Timeout | undefined;
    const payOwed = () => {
      clearTimeout(owedTimer);
      if (owed !== undefined) stray(socket, owed);
      owed = undefined;
    };
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) return;
        const [line = '', ...lines] = buffered.slice(0, end).split('\r\n');
        buffered = buffered.slice(end + 4);
        let exchangeId: string | undefined;
        for (const header of lines) {
          const colon = header.indexOf(':');
          if (header.slice(0, colon).trim().toLowerCase() === EXCHANGE_HEADER)
            exchangeId = header.slice(colon + 1).trim();
        }
        const [, mode = '', marker = ''] = (line.split(' ')[1] ?? '').split('?')[0]!.split('/').slice(-3);
        const raw = answer(marker, exchangeId);
        payOwed();
        socket.write(raw);
        if (mode === 'next') {
          owed = raw;
          owedTimer = setTimeout(payOwed, 20);
        } else if (mode === 'soon') setTimeout(() => stray(socket, raw), Math.floor(Math.random() * 4));
        else if (mode === 'late') setTimeout(() => stray(socket, raw), 30);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => accepted,
    strays: () => strays,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
