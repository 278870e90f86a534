/**
 * The listener over real HTTPS sockets: malformed and smuggled requests, size and time
 * limits. Each refusal is a problem+json with a request id, and the recording upstream
 * proves that nothing of a refused request reached it.
 */
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  rawRequest,
  sleep,
  startRecordingUpstream,
  startTestGateway,
  type RawResponse,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const MAX_BODY = 1024;
let upstream: RecordingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(upstream.url, {
    listener: {
      limits: { maxBodyBytes: MAX_BODY, headersTimeoutMs: 600, requestTimeoutMs: 1200 },
    },
  });
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});
beforeEach(() => {
  upstream.records.length = 0;
});

function expectProblem(response: RawResponse, status: number, code: string): void {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toBe('application/problem+json');
  expect(response.headers['cache-control']).toBe('no-store');
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  expect(JSON.parse(response.body)).toMatchObject({ status, code });
}

const send = (raw: string) => rawRequest(gw.port, gw.certificate.cert, raw);

describe('malformed and smuggled requests are refused with 400 and never forwarded', () => {
  const cases: [string, string, string][] = [
    ['duplicate Host', 'GET /v1/x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', 'ERR_INVALID_HEADER'],
    ['missing Host', 'GET /v1/x HTTP/1.1\r\n\r\n', 'ERR_INVALID_HEADER'],
    [
      'Content-Length with Transfer-Encoding',
      'POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      'ERR_BAD_REQUEST',
    ],
    [
      'duplicate Content-Length (same value)',
      'POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc',
      'ERR_BAD_REQUEST',
    ],
    [
      'duplicate Content-Length (different values)',
      'POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd',
      'ERR_BAD_REQUEST',
    ],
    ['obs-fold', 'GET /v1/x HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n', 'ERR_BAD_REQUEST'],
    [
      'bad chunk size',
      'POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n',
      'ERR_BAD_REQUEST',
    ],
    [
      'chunk size without CR',
      'POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n',
      'ERR_BAD_REQUEST',
    ],
    [
      'transfer coding other than chunked',
      'POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n',
      'ERR_INVALID_HEADER',
    ],
    [
      'Transfer-Encoding with whitespace before the colon',
      'POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n',
      'ERR_BAD_REQUEST',
    ],
    [
      'duplicate Authorization',
      'GET /v1/x HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n',
      'ERR_INVALID_HEADER',
    ],
    // The absolute form itself is served (RFC 9112 §3.2.2, request-target.test.ts); not with
    // credentials, nor with another scheme.
    [
      'absolute-form target with credentials',
      'GET http://user:pw@evil.example/v1/x HTTP/1.1\r\nHost: a\r\n\r\n',
      'ERR_CREDENTIAL_IN_URL',
    ],
    [
      'absolute-form target of another scheme',
      'GET ftp://evil.example/v1/x HTTP/1.1\r\nHost: a\r\n\r\n',
      'ERR_BAD_REQUEST',
    ],
    ['dot segment', 'GET /v1/../admin HTTP/1.1\r\nHost: a\r\n\r\n', 'ERR_BAD_REQUEST'],
    ['encoded dot segment', 'GET /v1/%2e%2e/admin HTTP/1.1\r\nHost: a\r\n\r\n', 'ERR_BAD_REQUEST'],
    ['NUL in a header value', 'GET /v1/x HTTP/1.1\r\nHost: a\r\nX-A: b\u0000c\r\n\r\n', 'ERR_BAD_REQUEST'],
  ];
  it.each(cases)('%s', async (_name, raw, code) => {
    const response = await send(raw);
    expectProblem(response, 400, code);
    await sleep(50);
    expect(upstream.records).toEqual([]);
  });

  it('a well-formed request through the same path does reach the upstream (control)', async () => {
    const response = await send(
      'POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc',
    );
    expect(response.status).toBe(200);
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(upstream.records).toHaveLength(1);
    expect(upstream.records[0]).toMatchObject({ bytes: 3, completed: true });
  });

  it('a bad chunk size arriving after the headers, in its own packet, never reaches the upstream', async () => {
    const response = await rawRequest(gw.port, gw.certificate.cert, async (socket) => {
      socket.write('POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n');
      await sleep(150);
      socket.write('zz\r\nabc\r\n0\r\n\r\n');
    });
    expectProblem(response, 400, 'ERR_BAD_REQUEST');
    await sleep(50);
    expect(upstream.records).toEqual([]);
  });

  it('a bad chunk later in a streamed body aborts the upstream request before it completes', async () => {
    const response = await rawRequest(gw.port, gw.certificate.cert, async (socket) => {
      socket.write('POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n');
      await sleep(200);
      socket.write('zz\r\nabc\r\n0\r\n\r\n');
    });
    expectProblem(response, 400, 'ERR_BAD_REQUEST');
    await sleep(100);
    expect(upstream.records.every((r) => !r.completed)).toBe(true);
  });
});

describe('size limits', () => {
  it('answers a 20 KiB header with 431', async () => {
    const response = await send(`GET /v1/x HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
    expectProblem(response, 431, 'ERR_HEADERS_TOO_LARGE');
    expect(upstream.records).toEqual([]);
  });

  it('answers a 9000-byte path with 414 at the edge; the upstream is never called', async () => {
    const response = await send(`GET /v1/${'a'.repeat(9000)} HTTP/1.1\r\nHost: a\r\n\r\n`);
    expectProblem(response, 414, 'ERR_URI_TOO_LONG');
    await sleep(50);
    expect(upstream.records).toEqual([]);
  });

  it('forwards a target of exactly maxUriBytes (control)', async () => {
    const path = `/v1/${'b'.repeat(4096 - '/v1/'.length)}`;
    const response = await send(`GET ${path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`);
    expect(response.status).toBe(200);
    expect(upstream.records.map((r) => r.url.length)).toEqual([4096]);
  });

  it('answers a declared Content-Length above the limit with 413 without contacting the upstream', async () => {
    const response = await send(
      `POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: ${MAX_BODY + 1}\r\n\r\nabc`,
    );
    expectProblem(response, 413, 'ERR_PAYLOAD_TOO_LARGE');
    expect(response.headers['connection']).toBe('close');
    await sleep(50);
    expect(upstream.records).toEqual([]);
  });

  it('does not invite an oversized body with 100 Continue, and does for one within the limit', async () => {
    const big = await rawRequest(
      gw.port,
      gw.certificate.cert,
      `POST /v1/x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: ${MAX_BODY + 1}\r\n\r\n`,
    );
    expect(big.raw).not.toContain('100 Continue');
    expectProblem(big, 413, 'ERR_PAYLOAD_TOO_LARGE');

    const small = await rawRequest(gw.port, gw.certificate.cert, async (socket) => {
      socket.write(
        'POST /v1/x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\nConnection: close\r\n\r\n',
      );
      await new Promise((resolve) => socket.once('data', resolve));
      socket.write('abc');
    });
    expect(small.raw).toMatch(/^HTTP\/1.1 100 Continue\r\n\r\nHTTP\/1.1 200 OK/);
    expect(upstream.records).toHaveLength(1);
    expect(upstream.records[0]?.headers['expect']).toBeUndefined();
  });

  it('answers a chunked body streamed past the limit with 413; the upstream never gets the excess', async () => {
    const chunk = 'x'.repeat(300);
    const response = await rawRequest(gw.port, gw.certificate.cert, async (socket) => {
      socket.write('POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n');
      for (let i = 0; i < 8 && !socket.destroyed; i++) {
        socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
        await sleep(40);
      }
    });
    expectProblem(response, 413, 'ERR_PAYLOAD_TOO_LARGE');
    await sleep(100);
    // The first chunks went upstream as they came (streaming); the one crossing the limit did not.
    expect(upstream.records).toHaveLength(1);
    expect(upstream.records[0]?.bytes).toBeLessThanOrEqual(MAX_BODY);
    expect(upstream.records[0]?.bytes).toBeGreaterThan(0);
    expect(upstream.records[0]?.completed).toBe(false);
  });

  it('forwards a body exactly at the limit', async () => {
    const body = 'y'.repeat(MAX_BODY);
    const response = await send(
      `POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: ${MAX_BODY}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(response.status).toBe(200);
    expect(upstream.records[0]).toMatchObject({ bytes: MAX_BODY, completed: true });
  });
});

describe('connection bounds', () => {
  it('closes connections beyond maxConnections before the TLS handshake', async () => {
    const bounded = await startTestGateway(upstream.url, { listener: { limits: { maxConnections: 2 } } });
    const open = (): Promise<{ outcome: string; socket: TLSSocket }> =>
      new Promise((resolve) => {
        const socket = tlsConnect({
          host: '127.0.0.1',
          port: bounded.port,
          ca: bounded.certificate.cert,
          servername: 'localhost',
        });
        socket.once('secureConnect', () => resolve({ outcome: 'connected', socket }));
        socket.once('error', () => resolve({ outcome: 'refused', socket }));
        socket.once('close', () => resolve({ outcome: 'refused', socket }));
      });
    try {
      const first = await open();
      const second = await open();
      const third = await open();
      expect([first.outcome, second.outcome, third.outcome]).toEqual(['connected', 'connected', 'refused']);
      for (const { socket } of [first, second, third]) socket.destroy();
    } finally {
      await bounded.close();
    }
  });
});

describe('keep-alive bounds', () => {
  /** Writes `data`, reads until the server closes; resolves with what came and when. */
  function untilServerCloses(port: number, ca: string, data: string): Promise<{ text: string; ms: number }> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      let text = '';
      const socket = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
      socket.once('secureConnect', () => socket.write(data));
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.once('close', () => resolve({ text, ms: Date.now() - started }));
      socket.once('error', reject);
    });
  }

  it('closes a connection after maxRequestsPerConnection requests, and an idle one after keepAliveTimeoutMs', async () => {
    const bounded = await startTestGateway(upstream.url, {
      listener: { limits: { maxRequestsPerConnection: 2, keepAliveTimeoutMs: 300 } },
    });
    try {
      const request = 'GET /v1/a HTTP/1.1\r\nHost: a\r\n\r\n';
      const two = await untilServerCloses(
        bounded.port,
        bounded.certificate.cert,
        request + request + request,
      );
      // Bodies carry no newline, so a status line may follow one directly.
      const heads = two.text.match(/HTTP\/1\.1 \d+|^connection: .*$/gim) ?? [];
      // The third (pipelined) request is not answered: the second response announced the close.
      expect(heads.map((line) => line.toLowerCase().trim())).toEqual([
        'http/1.1 200',
        'connection: keep-alive',
        'http/1.1 200',
        'connection: close',
      ]);
      expect(upstream.records).toHaveLength(2);

      const idle = await untilServerCloses(bounded.port, bounded.certificate.cert, request);
      expect(idle.text).toMatch(/^HTTP\/1\.1 200 OK/);
      expect(idle.ms).toBeGreaterThanOrEqual(300);
      expect(idle.ms).toBeLessThan(3000);
    } finally {
      await bounded.close();
    }
  });
});

describe('time limits', () => {
  it('answers headers that never finish with 408', async () => {
    const response = await rawRequest(gw.port, gw.certificate.cert, 'GET /v1/x HTTP/1.1\r\nHost: a\r\n');
    expectProblem(response, 408, 'ERR_REQUEST_TIMEOUT');
    expect(upstream.records).toEqual([]);
  });

  it('answers a body that stops arriving with 408 and does not complete the upstream request', async () => {
    const response = await rawRequest(
      gw.port,
      gw.certificate.cert,
      'POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n0123456789',
    );
    expectProblem(response, 408, 'ERR_REQUEST_TIMEOUT');
    await sleep(100);
    expect(upstream.records.every((r) => !r.completed)).toBe(true);
  });
});
