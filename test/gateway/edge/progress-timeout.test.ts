/**
 * Progress timeouts (issue 31, item 5), like nginx's send_timeout and Envoy's stream idle
 * timeout: an answer the client does not take, on HTTP/2 a stream, on HTTP/1.1 a connection,
 * is reset or closed once no byte has moved either way for `listener.limits.progressTimeoutMs`;
 * refusals and 401s included; counted in /metrics. Before, a client that opened no flow-control
 * window, or stopped reading, held its stream or connection for as long as it liked.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect as http2Connect, constants, type ClientHttp2Session } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  sleep,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const PROGRESS_MS = 1000;
/** The sweep's granularity and a busy machine's delay, on top of the timeout. */
const BOUND_MS = PROGRESS_MS + 3000;
/** Larger than an HTTP/2 stream's flow-control windows hold. */
const BIG = 8 * 1024 * 1024;
/**
 * Larger than what the kernel's and TLS's buffers of both ends hold together, for HTTP/1.1:
 * Linux grows a receive buffer up to net.ipv4.tcp_rmem's maximum (32 MiB here) and a send
 * buffer up to tcp_wmem's (4 MiB). With 8 MiB a quiet machine took the whole answer into its
 * buffers, and a client that read nothing had left the gateway nothing to wait for.
 */
const HUGE = 64 * 1024 * 1024;

let upstream: RecordingUpstream;
let gw: TestGateway;
let dataDir: string;
const big = Buffer.alloc(BIG, 'x');
const huge = Buffer.alloc(HUGE, 'x');

beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' });
    res.end(req.url === '/big/huge' ? huge : big);
  });
  dataDir = mkdtempSync(join(tmpdir(), 'portico-progress-'));
  gw = await startTestGateway(
    upstream.url,
    {
      routes: [
        { prefix: '/v1', upstream: upstream.url, auth: 'required' },
        { prefix: '/big', upstream: upstream.url, auth: 'none' },
      ],
      rateLimits: { policies: [] },
      listener: { limits: { progressTimeoutMs: PROGRESS_MS } },
    },
    { dataDir },
  );
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

function h2(settings: { initialWindowSize?: number } = {}): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(gw.origin, { ca: gw.certificate.cert, servername: 'localhost', settings });
    session.once('connect', () => resolve(session));
    session.once('error', reject);
  });
}

/**
 * One h2 request whose answer the client does not take: with no window at all, or reading
 * nothing. Resolves with how the stream ended and when, or `held` past the bound.
 */
async function stalledStream(session: ClientHttp2Session, path: string) {
  const stream = session.request({ ':path': path });
  stream.on('error', () => {});
  // Whatever the window, nothing is read: no WINDOW_UPDATE goes back.
  stream.pause();
  const status = new Promise<number>((resolve) =>
    stream.once('response', (h) => resolve(Number(h[':status']))),
  );
  const start = Date.now();
  const ended = new Promise<'reset' | 'closed'>((resolve) =>
    stream.once('close', () => resolve(stream.rstCode === constants.NGHTTP2_NO_ERROR ? 'closed' : 'reset')),
  );
  const outcome = await Promise.race([ended, sleep(BOUND_MS + 2000).then(() => 'held' as const)]);
  return { outcome, ms: Date.now() - start, status: await Promise.race([status, sleep(10).then(() => 0)]) };
}

describe('HTTP/2', () => {
  it.each([
    ['a 401', '/v1/orders', 401],
    ['a refusal (no route)', '/nowhere', 404],
    ['a large answer', '/big/file', 200],
  ])('a stream with no flow-control window is reset: %s', async (_name, path, status) => {
    const session = await h2({ initialWindowSize: 0 });
    try {
      const result = await stalledStream(session, path);
      expect(result).toMatchObject({ outcome: 'reset', status });
      expect(result.ms).toBeLessThan(BOUND_MS);
    } finally {
      session.destroy();
    }
  });

  it('a stream whose reader stopped reading is reset; the connection goes on serving', async () => {
    const session = await h2();
    try {
      const result = await stalledStream(session, '/big/file');
      expect(result).toMatchObject({ outcome: 'reset', status: 200 });
      expect(result.ms).toBeLessThan(BOUND_MS);
      // Another stream on the same connection, read as it comes, is served whole.
      const stream = session.request({ ':path': '/big/again' });
      let bytes = 0;
      stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
      await new Promise((resolve) => stream.once('end', resolve));
      expect(bytes).toBe(BIG);
    } finally {
      session.destroy();
    }
  });
});

/**
 * A TLS connection that sends one request and then reads as `read` says, for `BOUND_MS` (and a
 * little more for bursts); then it reads on to the end: the whole answer if the connection was
 * held, a cut one (and the close) if the gateway ended it. A paused socket learns of the close
 * only once it reads again, so the outcome is told by what reading on gives.
 */
async function http1(path: string, read: 'nothing' | 'bursts' | 'steadily') {
  const socket: TLSSocket = tlsConnect({
    host: '127.0.0.1',
    port: gw.port,
    ca: gw.certificate.cert,
    servername: 'localhost',
    ALPNProtocols: ['http/1.1'],
  });
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('secureConnect', resolve));
  let bytes = 0;
  let head = -1;
  const whole = new Promise<'whole'>((resolve) =>
    socket.on('data', (chunk: Buffer) => {
      if (head === -1) {
        const end = chunk.indexOf('\r\n\r\n');
        if (end !== -1) head = end + 4;
      }
      bytes += chunk.length;
      if (head !== -1 && bytes - head >= HUGE) resolve('whole');
    }),
  );
  const closed = new Promise<'closed'>((resolve) => socket.once('close', () => resolve('closed')));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
  if (read !== 'steadily') {
    // Let the head arrive, then stop reading.
    await sleep(100);
    socket.pause();
    let bursts: NodeJS.Timeout | undefined;
    if (read === 'bursts')
      // A little every 2.5 s: more than the timeout without a byte moving.
      bursts = setInterval(() => {
        socket.resume();
        setTimeout(() => socket.pause(), 5);
      }, 2500);
    await sleep(read === 'bursts' ? BOUND_MS + 3000 : BOUND_MS);
    clearInterval(bursts);
    socket.resume();
  }
  const outcome = await Promise.race([whole, closed, sleep(10_000).then(() => 'neither' as const)]);
  socket.destroy();
  return { outcome, body: head === -1 ? 0 : bytes - head };
}

/** The count of `portico_progress_timeouts_total` for `protocol`. */
async function timeouts(protocol: string): Promise<number> {
  const metrics = await (await fetch(`${gw.adminOrigin}/metrics`)).text();
  const line = metrics
    .split('\n')
    .find((l) => l.startsWith('portico_progress_timeouts_total{') && l.includes(`protocol="${protocol}"`));
  return Number(line?.split(' ').at(-1) ?? 0);
}

describe('HTTP/1.1', () => {
  it.each(['nothing', 'bursts'] as const)(
    'a connection whose reader takes %s (no byte for longer than the timeout) is closed',
    async (read) => {
      const before = await timeouts('http1');
      const result = await http1('/big/huge', read);
      expect(result.outcome).toBe('closed');
      expect(result.body).toBeLessThan(HUGE);
      expect(await timeouts('http1')).toBeGreaterThan(before);
    },
    30_000,
  );

  it('a reader that reads steadily gets the whole answer', async () => {
    const result = await http1('/big/huge', 'steadily');
    expect(result.outcome).toBe('whole');
  });
});

it('counts the streams and connections it ended in /metrics', async () => {
  const metrics = await (await fetch(`${gw.adminOrigin}/metrics`)).text();
  for (const protocol of ['http1', 'http2']) {
    const line = metrics
      .split('\n')
      .find((l) => l.startsWith('portico_progress_timeouts_total{') && l.includes(`protocol="${protocol}"`));
    expect(line, metrics.slice(0, 0)).toBeDefined();
    expect(Number(line?.split(' ').at(-1))).toBeGreaterThan(0);
  }
});
