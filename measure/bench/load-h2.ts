/**
 * The HTTP/2 load generator, for the rows autocannon cannot drive (it speaks HTTP/1.1 only).
 * Run by measure/bench/measure.ts as a child process, like load.ts, with the same options and
 * the same one JSON line (LoadResult) on stdout:
 *
 *   node measure/bench/load-h2.ts '{"url": "...", "connections": 32, "duration": 6, "headers": {...}}'
 *
 * `connections` is the number of requests in flight, as with autocannon's 32 connections of
 * one request each; here they are streams, 8 to a connection (a client multiplexes: a browser
 * opens one connection per origin), so 32 means 4 connections of 8 streams.
 *
 * TLS: as autocannon, no certificate check (the row's probe verified it against the bench CA);
 * a connection that does not negotiate `h2` is an error, so the row cannot quietly be HTTP/1.1.
 */
import { connect, type ClientHttp2Session, type OutgoingHttpHeaders } from 'node:http2';
import type { LoadOptions, LoadResult } from './load.ts';

const STREAMS_PER_CONNECTION = 8;
const TIMEOUT_MS = 10_000;

function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

function open(origin: string): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = connect(origin, { rejectUnauthorized: false });
    session.once('error', reject);
    session.once('connect', () => {
      if (session.alpnProtocol !== 'h2')
        reject(new Error(`ALPN chose ${String(session.alpnProtocol)}, not h2`));
      else resolve(session);
    });
  });
}

/** One request, its body read and dropped: its status, or a thrown error or timeout. */
function exchange(session: ClientHttp2Session, headers: OutgoingHttpHeaders): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers);
    let status = 0;
    stream.setTimeout(TIMEOUT_MS, () => {
      stream.close();
      reject(new Error('timeout'));
    });
    stream.once('response', (head) => (status = Number(head[':status'])));
    stream.once('error', reject);
    stream.once('end', () => resolve(status));
    stream.resume();
  });
}

function refusedByGoaway(error: NodeJS.ErrnoException): boolean {
  return (
    error.code === 'ERR_HTTP2_GOAWAY_SESSION' ||
    error.code === 'ERR_HTTP2_INVALID_SESSION' ||
    (error.code === 'ERR_HTTP2_STREAM_ERROR' && error.message.includes('NGHTTP2_REFUSED_STREAM'))
  );
}

/**
 * One connection's place: its session, replaced when the gateway ends it (GOAWAY after
 * `maxRequestsPerConnection` streams), as a client opens a new connection then.
 */
function connectionSlot(origin: string): {
  current: () => Promise<ClientHttp2Session>;
  close: () => Promise<void>;
} {
  let session = open(origin);
  const usable = (s: ClientHttp2Session) => !s.closed && !s.destroyed;
  return {
    async current() {
      const now = await session;
      if (!usable(now)) session = open(origin);
      return session;
    },
    async close() {
      const last = await session;
      if (usable(last)) await new Promise<void>((resolve) => last.close(() => resolve()));
    },
  };
}

async function run(options: LoadOptions): Promise<LoadResult> {
  const url = new URL(options.url);
  const headers = { ':path': `${url.pathname}${url.search}`, ...options.headers };
  const connections = Math.max(1, Math.ceil(options.connections / STREAMS_PER_CONNECTION));
  const streams = Math.min(options.connections, STREAMS_PER_CONNECTION);
  const times: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let timeouts = 0;
  const slots = Array.from({ length: connections }, () => connectionSlot(url.origin));
  await Promise.all(slots.map((slot) => slot.current()));
  const started = performance.now();
  const deadline = started + options.duration * 1000;
  const worker = async (slot: ReturnType<typeof connectionSlot>) => {
    while (performance.now() < deadline) {
      const sent = performance.now();
      try {
        const status = await exchange(await slot.current(), headers);
        statuses[status] = (statuses[status] ?? 0) + 1;
        times.push(performance.now() - sent);
      } catch (error) {
        // Not processed by the gateway (sent as its GOAWAY came): a client sends it again.
        if (refusedByGoaway(error as NodeJS.ErrnoException)) continue;
        if ((error as Error).message === 'timeout') timeouts += 1;
        else errors += 1;
      }
    }
  };
  await Promise.all(slots.flatMap((slot) => Array.from({ length: streams }, () => worker(slot))));
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(slots.map((slot) => slot.close()));
  const sorted = Float64Array.from(times).sort();
  return {
    responses: times.length,
    seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    statuses,
    errors,
    timeouts,
  };
}

// An entry point only, like load.ts.
const options = JSON.parse(process.argv[2] ?? '{}') as LoadOptions;
process.stdout.write(`${JSON.stringify(await run(options))}\n`);
