/**
 * Streaming answers through the gateway, over real sockets (issue 35): a `text/event-stream`
 * answer on a route with the cache and compression on reaches the client event by event, is
 * never stored, and lives past the proxy's time limits for ordinary answers while it keeps
 * sending.
 *
 * No timing guesses: the upstream sends its second event only once the test has decoded the
 * first one at the client, so a gateway that held the first event back (buffered, or waiting
 * for a compressor's window) fails here instead of passing slowly.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip } from 'node:zlib';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSession, h2Session } from '../support/h2-client.ts';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

/** How long the test waits for event 1 before deciding the gateway holds it back. */
const FIRST_EVENT_WAIT_MS = 3000;

/** Per request id (a query parameter): lets the upstream send event 2 on each of its streams. */
const releases = new Map<string, Array<() => void>>();
const release = (id: string) => releases.get(id)?.forEach((resolve) => resolve());

function releaseFor(id: string): Promise<void> {
  return new Promise((resolve) => {
    releases.set(id, [...(releases.get(id) ?? []), resolve]);
    // Never hang the upstream if the test gave up.
    setTimeout(resolve, FIRST_EVENT_WAIT_MS + 500).unref();
  });
}

function answer(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://upstream');
  const head = { 'content-type': 'text/event-stream', 'cache-control': 'public, max-age=60' };
  if (url.pathname === '/v1/events') {
    const id = url.searchParams.get('id') ?? '';
    const released = releaseFor(id);
    res.writeHead(200, head);
    res.write(`id: 1\ndata: ${'first '.repeat(50)}\n\n`);
    void released.then(() => res.end(`id: 2\ndata: second\n\n`));
    return;
  }
  if (url.pathname === '/v1/ticks') {
    // An event every 100 ms for 1.5 s: longer than every proxy limit the test configures.
    res.writeHead(200, head);
    let n = 0;
    const timer = setInterval(() => {
      n++;
      if (n < 15) return void res.write(`data: tick ${n}\n\n`);
      clearInterval(timer);
      res.end(`data: done\n\n`);
    }, 100);
    res.on('close', () => clearInterval(timer));
    return;
  }
  res.writeHead(404).end();
}

let upstream: RecordingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream(answer);
  gw = await startTestGateway(upstream.url, {
    routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none', cache: true }],
    rateLimits: { policies: [] },
    compression: { enabled: true, minBytes: 1 },
    // Each below the stream's 1.5 s: only a pause between chunks may end it.
    proxy: { responseTimeoutMs: 500, bodyTimeoutMs: 500 },
    listener: { limits: { requestTimeoutMs: 300, headersTimeoutMs: 300 } },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

/** The decoded text of a body as it arrives, whatever coding the gateway chose. */
function decoded(body: Readable, encoding: string | undefined): Readable {
  if (encoding === 'gzip') return body.pipe(createGunzip());
  if (encoding === 'br') return body.pipe(createBrotliDecompress());
  expect(encoding ?? 'identity').toBe('identity');
  return body;
}

/** Reads `text` until it holds `marker`, or fails after the wait. */
function waitFor(text: () => string, stream: Readable, marker: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!text().includes(marker)) return;
      clearTimeout(timer);
      stream.off('data', check);
      resolve();
    };
    const timer = setTimeout(
      () => reject(new Error(`"${marker}" did not reach the client; got ${JSON.stringify(text())}`)),
      FIRST_EVENT_WAIT_MS,
    );
    stream.on('data', check);
    check();
  });
}

interface Opened {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
  close(): Promise<void>;
}

const clients: Record<'HTTP/1.1' | 'HTTP/2', (path: string) => Promise<Opened>> = {
  'HTTP/1.1': async (path) => {
    const res = await request(`${gw.origin}${path}`, {
      dispatcher: gw.agent,
      headers: { 'accept-encoding': 'gzip, br', accept: 'text/event-stream' },
    });
    return { status: res.statusCode, headers: res.headers, body: res.body, close: async () => {} };
  },
  'HTTP/2': async (path) => {
    const session = await h2Session(gw.port, gw.certificate.cert);
    const stream = session.request({
      ':path': path,
      'accept-encoding': 'gzip, br',
      accept: 'text/event-stream',
    });
    const head = await new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
      stream.once('response', resolve);
      stream.once('error', reject);
    });
    return {
      status: Number(head[':status']),
      headers: head,
      body: stream,
      close: () => closeSession(session),
    };
  },
};

/** Collects the decoded text of a response as it comes. */
function reader(opened: Opened): { text: () => string; stream: Readable; ended: Promise<void> } {
  const stream = decoded(opened.body, opened.headers['content-encoding'] as string | undefined);
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => (text += chunk));
  const ended = new Promise<void>((resolve, reject) => {
    stream.once('end', resolve);
    stream.once('error', reject);
  });
  return { text: () => text, stream, ended };
}

let nextId = 0;

describe.each(['HTTP/1.1', 'HTTP/2'] as const)('text/event-stream over %s', (protocol) => {
  it('delivers each event as the upstream sends it, compressed or not', async () => {
    const id = `${protocol}-${nextId++}`;
    const opened = await clients[protocol](`/v1/events?id=${id}`);
    try {
      expect(opened.status).toBe(200);
      const { text, stream, ended } = reader(opened);
      // The upstream holds event 2 until this point: event 1 came through on its own.
      await waitFor(text, stream, 'id: 1\n');
      expect(text()).not.toContain('second');
      release(id);
      await ended;
      expect(text()).toContain('data: second\n\n');
    } finally {
      release(id);
      await opened.close();
    }
  });

  it('is never stored: the next request goes to the upstream', async () => {
    const path = `/v1/events?id=${protocol}-stored`;
    for (let round = 0; round < 2; round++) {
      const before = upstream.records.length;
      const opened = await clients[protocol](path);
      try {
        const { text, stream, ended } = reader(opened);
        await waitFor(text, stream, 'id: 1\n');
        release(`${protocol}-stored`);
        await ended;
        expect(String(opened.headers['cache-status'] ?? '')).not.toMatch(/stored|hit/);
        expect(String(opened.headers['cache-status'])).toContain('detail=event-stream');
        expect(upstream.records.length, `round ${round} reached the upstream`).toBe(before + 1);
      } finally {
        await opened.close();
      }
    }
  });

  it('does not hold a second client behind the first stream', async () => {
    // Two misses for one resource: the cache may collapse them, but a stream it will not
    // store must not make the second wait for the first to end.
    const id = `${protocol}-together`;
    const first = await clients[protocol](`/v1/events?id=${id}`);
    const second = await clients[protocol](`/v1/events?id=${id}`).catch(async (error: unknown) => {
      await first.close();
      throw error;
    });
    try {
      const a = reader(first);
      const b = reader(second);
      await waitFor(a.text, a.stream, 'id: 1\n');
      await waitFor(b.text, b.stream, 'id: 1\n');
      release(id);
      await Promise.all([a.ended, b.ended]);
      expect(b.text()).toContain('data: second\n\n');
    } finally {
      release(id);
      await Promise.all([first.close(), second.close()]);
    }
  });

  it('outlives the request and response timeouts while events keep coming', async () => {
    const opened = await clients[protocol]('/v1/ticks');
    try {
      expect(opened.status).toBe(200);
      const { text, ended } = reader(opened);
      await ended;
      expect(text()).toContain('data: tick 14\n\n');
      expect(text()).toContain('data: done\n\n');
    } finally {
      await opened.close();
    }
  });
});
