/**
 * A plain-HTTP relay in front of one endpoint of the identity provider, which the test can
 * count through and cut: how many introspection calls the gateway made, and what it does
 * when the endpoint is unreachable. It forwards bytes as they are (headers and body).
 */
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Relay {
  url: string;
  /** Requests received so far (cut ones included). */
  readonly requests: number;
  /** When true, every connection is cut: the endpoint is down. */
  down: boolean;
  /** Holds each answer back this long (simultaneous first uses overlap). */
  delayMs: number;
  close(): Promise<void>;
}

export async function startRelay(target: string): Promise<Relay> {
  const state = { requests: 0, down: false, delayMs: 0 };
  const to = new URL(target);
  const server = createServer((req, res) => {
    state.requests += 1;
    if (state.down) {
      req.socket.destroy();
      return;
    }
    const headers: IncomingHttpHeaders = { ...req.headers, host: to.host };
    const upstream = request(to, { method: req.method, headers }, (answer) => {
      setTimeout(() => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      }, state.delayMs);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get requests() {
      return state.requests;
    },
    get down() {
      return state.down;
    },
    set down(value) {
      state.down = value;
    },
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(value) {
      state.delayMs = value;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
