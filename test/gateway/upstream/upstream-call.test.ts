/**
 * callUpstream (gateway/upstream/upstream-call.ts) against a real HTTP server through a real
 * undici Pool: when an answer comes whole and when as a stream, HEAD and empty bodies, interim
 * answers, backpressure on a large body, and a client that leaves before the request is sent
 * or in the middle of the body.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientSignal } from '../../../gateway/pipeline/client-signal.ts';
import type { InterimResponse } from '../../../gateway/upstream/interim.ts';
import { callUpstream, type UpstreamCallOptions } from '../../../gateway/upstream/upstream-call.ts';

const LARGE = 4 * 1024 * 1024;
let server: Server;
let pool: Pool;
/** Paths the server received, in order. */
const received: string[] = [];
/** Resolved when the server sees a response it was writing cut by the client. */
let cutSeen: Promise<void> = Promise.resolve();
let markCut: () => void = () => {};

function answer(req: IncomingMessage, res: ServerResponse): void {
  received.push(req.url ?? '');
  switch (req.url) {
    case '/whole':
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '11' });
      res.end('{"ok":true}');
      return;
    case '/pieces':
      // Declared length, sent in two writes a while apart: not whole with the head.
      res.writeHead(200, { 'content-length': '10' });
      res.write('hello');
      setTimeout(() => res.end('world'), 50);
      return;
    case '/chunked':
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('a');
      setTimeout(() => res.end('b'), 20);
      return;
    case '/empty':
      res.writeHead(204);
      res.end();
      return;
    case '/early-hints':
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      res.writeHead(200, { 'content-length': '2' });
      res.end('ok');
      return;
    case '/large':
      res.writeHead(200, { 'content-length': String(LARGE) });
      res.end(Buffer.alloc(LARGE, 0x61));
      return;
    case '/endless': {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const timer = setInterval(() => res.write(Buffer.alloc(1024, 0x62)), 5);
      res.on('close', () => {
        clearInterval(timer);
        if (!res.writableFinished) markCut();
      });
      return;
    }
    default:
      res.writeHead(404, { 'content-length': '0' });
      res.end();
  }
}

function options(path: string, over: Partial<UpstreamCallOptions> = {}): UpstreamCallOptions {
  return {
    path,
    method: 'GET',
    headers: ['x-test', '1'],
    body: null,
    signal: new ClientSignal(),
    onInfo: () => {},
    ...over,
  };
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

beforeAll(async () => {
  server = createServer(answer);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  // One connection: a request queued behind another waits for it.
  pool = new Pool(`http://127.0.0.1:${port}`, { connections: 1, pipelining: 1 });
});

afterAll(async () => {
  await pool.close();
  server.closeAllConnections();
  server.close();
});

describe('callUpstream', () => {
  it('gives a body that came with its head whole, with no stream', async () => {
    const answer = await callUpstream(pool, options('/whole'));
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(answer.stream).toBeNull();
    expect(answer.whole?.toString()).toBe('{"ok":true}');
  });

  it('gives a body still arriving as a stream that yields every byte', async () => {
    const pieces = await callUpstream(pool, options('/pieces'));
    expect(pieces.whole).toBeUndefined();
    expect((await readAll(pieces.stream!)).toString()).toBe('helloworld');
    const chunked = await callUpstream(pool, options('/chunked'));
    expect(chunked.whole).toBeUndefined();
    expect((await readAll(chunked.stream!)).toString()).toBe('ab');
  });

  it('gives HEAD no body, and an empty answer an empty one', async () => {
    const head = await callUpstream(pool, options('/whole', { method: 'HEAD' }));
    expect(head.statusCode).toBe(200);
    expect(head.whole).toBeUndefined();
    expect(head.stream).toBeNull();
    const empty = await callUpstream(pool, options('/empty'));
    expect(empty.statusCode).toBe(204);
    expect(empty.whole?.length).toBe(0);
    expect(empty.stream).toBeNull();
  });

  it('hands interim answers to onInfo and settles with the final one', async () => {
    const interim: InterimResponse[] = [];
    const answer = await callUpstream(
      pool,
      options('/early-hints', { onInfo: (info) => interim.push(info) }),
    );
    expect(interim.map((info) => info.statusCode)).toEqual([103]);
    expect(interim[0]!.headers['link']).toBe('</style.css>; rel=preload; as=style');
    expect(answer.statusCode).toBe(200);
    expect(answer.whole?.toString()).toBe('ok');
  });

  it('relays a large body read slowly without losing a byte (the connection is paused meanwhile)', async () => {
    const answer = await callUpstream(pool, options('/large'));
    expect(answer.stream).not.toBeNull();
    let total = 0;
    let allA = true;
    for await (const chunk of answer.stream!) {
      const bytes = chunk as Buffer;
      total += bytes.length;
      if (bytes.some((byte) => byte !== 0x61)) allA = false;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(total).toBe(LARGE);
    expect(allA).toBe(true);
    // The connection is whole again: the next request is answered on it.
    expect((await callUpstream(pool, options('/whole'))).whole?.toString()).toBe('{"ok":true}');
  });

  it('cuts a body whose client left, and does not send a request whose client left while it was queued', async () => {
    received.length = 0;
    cutSeen = new Promise((resolve) => (markCut = resolve));
    // The pool's one connection is busy with an endless answer, so the next call queues.
    const busy = new ClientSignal();
    const endless = await callUpstream(pool, options('/endless', { signal: busy }));
    const gone = new ClientSignal();
    const queued = callUpstream(pool, options('/whole?queued', { signal: gone }));
    // Its turn comes with its client gone: it is aborted without being sent.
    const queuedRefused = expect(queued).rejects.toMatchObject({ code: 'UND_ERR_ABORTED' });
    gone.abort();
    // The endless answer's client leaves too: its stream fails and the upstream sees the cut.
    endless.stream!.on('error', () => {});
    busy.abort();
    await cutSeen;
    expect(endless.stream!.destroyed).toBe(true);
    await queuedRefused;
    await callUpstream(pool, options('/whole?after'));
    expect(received).toEqual(['/endless', '/whole?after']);
  });

  it('rejects with the error when the upstream cannot be reached', async () => {
    const closed = new Pool('http://127.0.0.1:9', { connections: 1 });
    await expect(callUpstream(closed, options('/whole'))).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await closed.close();
  });
});
