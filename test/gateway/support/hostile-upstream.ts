/**
 * An upstream that answers on a raw socket, byte by byte as each case says: broken status
 * lines, bad framing, oversized or invalid headers, interim answers, stalls and resets. No
 * HTTP library sits between the case and the wire, so nothing can "fix" what it sends.
 *
 * The case is the last path segment (`/plain/status-999`); a request for `ok` gets a good
 * answer, which is how a test checks that the gateway still serves after a bad one.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createSecureContext, TLSSocket } from 'node:tls';

/**
 * What one case writes, given the socket and the request it answers. Over TLS, `raw` is the
 * TCP socket beneath, for bytes no TLS stack would send (a stray alert, a garbage record).
 */
export type Answer = (socket: Socket, request: ParsedRequest, raw: Socket) => void | Promise<void>;

export interface ParsedRequest {
  method: string;
  target: string;
  headers: Map<string, string>;
}

export interface HostileUpstream {
  url: string;
  /** Requests received per case name, to tell that a request did or did not arrive. */
  hits: Map<string, number>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A good answer, keep-alive, cacheable for a minute so the cached route stores it. */
export function okResponse(body = '{"ok":true}'): string {
  return (
    'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: max-age=60\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** Writes `raw` and keeps the connection open (a pooled connection the gateway may reuse). */
export const send =
  (raw: string | Buffer): Answer =>
  (socket) => {
    socket.write(raw);
  };

/** Writes `raw`, then ends the connection. */
export const sendAndClose =
  (raw: string | Buffer): Answer =>
  (socket) => {
    socket.end(raw);
  };

/** Writes each part after `gapMs`, keeping the connection open. */
export const sendInSteps =
  (parts: readonly (string | Buffer)[], gapMs = 60): Answer =>
  async (socket) => {
    for (const part of parts) {
      if (socket.destroyed) return;
      socket.write(part);
      await sleep(gapMs);
    }
  };

/** With `tls`, the upstream speaks HTTPS with that certificate (`url` is then https:). */
export async function startHostileUpstream(
  cases: ReadonlyMap<string, Answer>,
  tls?: { cert: string; key: string },
): Promise<HostileUpstream> {
  const hits = new Map<string, number>();
  const sockets = new Set<Socket>();
  const secureContext = tls === undefined ? undefined : createSecureContext(tls);
  const server: Server = createServer((raw) => {
    sockets.add(raw);
    raw.on('close', () => sockets.delete(raw));
    raw.on('error', () => {});
    const socket = secureContext === undefined ? raw : new TLSSocket(raw, { isServer: true, secureContext });
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const request = takeRequest(buffered);
        if (request === undefined) return;
        buffered = buffered.subarray(request.consumed);
        const name = request.parsed.target.split('?')[0]?.split('/').at(-1) ?? '';
        hits.set(name, (hits.get(name) ?? 0) + 1);
        const answer = name === 'ok' ? send(okResponse()) : cases.get(name);
        if (answer === undefined) socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
        else void Promise.resolve(answer(socket, request.parsed, raw)).catch(() => socket.destroy());
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** One request off the front of `data`, body included (Content-Length only), if complete. */
function takeRequest(data: Buffer): { parsed: ParsedRequest; consumed: number } | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [line = '', ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const [method = '', target = ''] = line.split(' ');
  const headers = new Map<string, string>();
  for (const header of lines) {
    const colon = header.indexOf(':');
    headers.set(header.slice(0, colon).trim().toLowerCase(), header.slice(colon + 1).trim());
  }
  const length = Number(headers.get('content-length') ?? 0);
  if (data.length < end + 4 + length) return undefined;
  return { parsed: { method, target, headers }, consumed: end + 4 + length };
}
