/**
 * A plain-HTTP relay in front of one endpoint of the identity provider, which the test can
 * count through and cut: how many introspection calls the gateway made, and what it does
 * when the endpoint is unreachable. It forwards bytes as they are (headers and body), unless
 * the test makes it a machine in the middle (`tamper`): then it rewrites the request's headers
 * or the answer's body on their way.
 */
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a machine in the middle changes; each part as is when left out. */
export interface Tamper {
  /** The headers sent on to the endpoint. */
  headers?: (headers: IncomingHttpHeaders) => IncomingHttpHeaders;
  /** The answer's body sent back to the gateway. */
  body?: (text: string) => string | Promise<string>;
}

export interface Relay {
  url: string;
  /** Requests received so far (cut ones included). */
  readonly requests: number;
  /** The headers of the last request received, as the gateway sent them. */
  readonly lastHeaders: IncomingHttpHeaders | undefined;
  /** When true, every connection is cut: the endpoint is down. */
  down: boolean;
  /** Holds each answer back this long (simultaneous first uses overlap). */
  delayMs: number;
  tamper: Tamper | undefined;
  close(): Promise<void>;
}

export async function startRelay(target: string): Promise<Relay> {
  const state: {
    requests: number;
    lastHeaders: IncomingHttpHeaders | undefined;
    down: boolean;
    delayMs: number;
    tamper: Tamper | undefined;
  } = { requests: 0, lastHeaders: undefined, down: false, delayMs: 0, tamper: undefined };
  const to = new URL(target);
  const server = createServer((req, res) => {
    state.requests += 1;
    state.lastHeaders = req.headers;
    if (state.down) {
      req.socket.destroy();
      return;
    }
    const { tamper, delayMs } = state;
    const sent: IncomingHttpHeaders = { ...req.headers, host: to.host };
    const headers = tamper?.headers?.(sent) ?? sent;
    const upstream = request(to, { method: req.method, headers }, (answer) => {
      setTimeout(() => {
        const rewrite = tamper?.body;
        if (rewrite === undefined) {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        void readAll(answer)
          .then(rewrite)
          .then(
            (body) => {
              // The body's length changed: let Node frame the new one.
              const framed = { ...answer.headers };
              delete framed['content-length'];
              delete framed['transfer-encoding'];
              res.writeHead(answer.statusCode ?? 502, framed);
              res.end(body);
            },
            () => res.destroy(),
          );
      }, delayMs);
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
    get lastHeaders() {
      return state.lastHeaders;
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
    get tamper() {
      return state.tamper;
    },
    set tamper(value) {
      state.tamper = value;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

async function readAll(stream: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
}
