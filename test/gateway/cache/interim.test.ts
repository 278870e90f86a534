/**
 * RFC 9110 section 15.2: interim responses from the upstream reach the client before the
 * final one, through the real gateway on real sockets; they are never stored, never taken for
 * the final answer, and never sent to an HTTP/1.0 client.
 */
import { createServer, type Server } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http2';
import { connect, type AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeSession, h2Session } from '../support/h2-client.ts';
import { startTestGateway } from '../support/harness.ts';
import { createClock, startCacheGateway, type CacheGateway } from './support/cache-gateway.ts';

let upstream: Server;
let gateway: CacheGateway;
let served = 0;

beforeEach(async () => {
  served = 0;
  upstream = createServer((req, res) => {
    served++;
    res.writeProcessing();
    res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
    res.writeInformation(104, { 'upload-offset': '0' });
    res.writeHead(200, { 'cache-control': 'max-age=60', 'content-type': 'text/plain' });
    res.end(`final ${served}`);
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const { port } = upstream.address() as AddressInfo;
  gateway = await startCacheGateway({ upstream: `http://127.0.0.1:${port}`, clock: createClock() });
});

afterEach(async () => {
  await gateway.close();
  await new Promise<void>((resolve) => {
    upstream.close(() => resolve());
    upstream.closeAllConnections();
  });
});

/** A GET that records every interim response before the final one. */
async function getWithInterim(path: string) {
  const interim: { status: number; headers: Record<string, unknown> }[] = [];
  const response = await request(`${gateway.url}${path}`, {
    onInfo: ({ statusCode, headers }) => interim.push({ status: statusCode, headers }),
  });
  return {
    status: response.statusCode,
    headers: response.headers,
    body: await response.body.text(),
    interim,
  };
}

/** The raw bytes of an HTTP/1.0 exchange. */
function rawHttp10(path: string): Promise<string> {
  const { port } = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () =>
      socket.write(`GET ${path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n`),
    );
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

describe('RFC 9110 section 15.2: interim responses', () => {
  it('relays 102, 103 Early Hints and other 1xx before the final answer, with their fields', async () => {
    const miss = await getWithInterim('/v1/things');
    expect(miss.status).toBe(200);
    expect(miss.body).toBe('final 1');
    expect(miss.interim.map((i) => i.status)).toEqual([102, 103, 104]);
    expect(miss.interim[1]?.headers['link']).toBe('</style.css>; rel=preload; as=style');
    expect(miss.interim[2]?.headers['upload-offset']).toBe('0');
    expect(miss.headers['cache-status']).toBe('Portico; fwd=uri-miss; fwd-status=200; stored');
  });

  it('stores only the final response: a hit replays no interim response', async () => {
    await getWithInterim('/v1/things');
    const hit = await getWithInterim('/v1/things');
    expect(hit.status).toBe(200);
    expect(hit.body).toBe('final 1');
    expect(hit.interim).toEqual([]);
    expect(String(hit.headers['cache-status'])).toMatch(/^Portico; hit/);
    expect(served).toBe(1);
  });

  it('sends no 1xx to an HTTP/1.0 client', async () => {
    const text = await rawHttp10('/v1/things');
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(text).not.toMatch(/HTTP\/1\.1 1\d\d /);
    expect(text.endsWith('final 1')).toBe(true);
  });
});

describe('RFC 9110 section 15.2 over HTTP/2 (RFC 9113 section 8.1)', () => {
  it('relays the interim responses as informational HEADERS frames before the final response', async () => {
    const { port } = upstream.address() as AddressInfo;
    const gw = await startTestGateway(`http://127.0.0.1:${port}`, {
      routes: [{ prefix: '/v1', upstream: `http://127.0.0.1:${port}`, auth: 'none', cache: true }],
    });
    const session = await h2Session(gw.port, gw.certificate.cert);
    try {
      const interim: IncomingHttpHeaders[] = [];
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const stream = session.request({ ':path': '/v1/things' });
        stream.on('headers', (headers) => interim.push(headers));
        let status = 0;
        let body = '';
        stream.on('response', (headers) => (status = Number(headers[':status'])));
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => (body += chunk));
        stream.on('end', () => resolve({ status, body }));
        stream.on('error', reject);
        stream.end();
      });
      expect(answer).toEqual({ status: 200, body: 'final 1' });
      expect(interim.map((headers) => headers[':status'])).toEqual([102, 103, 104]);
      expect(interim[1]?.['link']).toBe('</style.css>; rel=preload; as=style');
    } finally {
      await closeSession(session);
      await gw.close();
    }
  });
});
