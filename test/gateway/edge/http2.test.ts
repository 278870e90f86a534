/**
 * HTTP/2 to clients on the HTTPS port, chosen by ALPN, through the same stages as HTTP/1.1:
 * a real node:http2 client for what a client may send, a raw frame writer (support/raw-h2.ts)
 * for what none should, and the recording upstream to prove what reached it, over HTTP/1.1.
 */
import { mkdtempSync } from 'node:fs';
import type { ClientHttp2Session } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closeSession, h2Request, h2Session, type H2Response } from '../support/h2-client.ts';
import {
  auditRecordOf,
  rawRequest,
  sleep,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';
import { connectRawH2, errorCodeOf, FRAME, requestFields, type RawH2 } from '../support/raw-h2.ts';

const MAX_BODY = 1024;
const MAX_HEADER = 8192;
const PROTOCOL_ERROR = 0x1;
let upstream: RecordingUpstream;
let gw: TestGateway;
let auditLogPath: string;
let session: ClientHttp2Session;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  auditLogPath = join(mkdtempSync(join(tmpdir(), 'portico-h2-audit-')), 'audit.log');
  gw = await startTestGateway(
    upstream.url,
    { listener: { limits: { maxBodyBytes: MAX_BODY, maxHeaderBytes: MAX_HEADER } } },
    { auditLogPath },
  );
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});
beforeEach(async () => {
  upstream.records.length = 0;
  session = await h2Session(gw.port, gw.certificate.cert);
});
afterEach(() => closeSession(session));

function expectAnswerHeaders(response: H2Response): void {
  expect(response.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  expect(response.headers['connection']).toBeUndefined();
}

function expectProblem(response: H2Response, status: number, code: string): void {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toBe('application/problem+json');
  expect(response.headers['cache-control']).toBe('no-store');
  expectAnswerHeaders(response);
  expect(JSON.parse(response.body)).toMatchObject({ status, code });
}

/** The protocol `on` picks for a client offering `protocols` (or the handshake error). */
function negotiate(protocols: string[] | undefined, on: TestGateway = gw): Promise<string | false> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port: on.port,
      ca: on.certificate.cert,
      servername: 'localhost',
      ...(protocols === undefined ? {} : { ALPNProtocols: protocols }),
    });
    socket.once('secureConnect', () => {
      resolve(socket.alpnProtocol ?? false);
      socket.destroy();
    });
    socket.once('error', reject);
  });
}

/** The record the gateway wrote for `requestId` (support/harness.ts). */
const auditRecord = (requestId: string) => auditRecordOf(auditLogPath, requestId);

describe('ALPN on the HTTPS port', () => {
  it('chooses h2 when the client offers it, before http/1.1', async () => {
    expect(await negotiate(['h2', 'http/1.1'])).toBe('h2');
    expect(await negotiate(['http/1.1', 'h2'])).toBe('h2');
  });

  it('chooses http/1.1 for a client offering only it, and serves HTTP/1.1 there', async () => {
    expect(await negotiate(['http/1.1'])).toBe('http/1.1');
    const response = await rawRequest(
      gw.port,
      gw.certificate.cert,
      'GET /v1/x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n',
    );
    expect(response.raw).toMatch(/^HTTP\/1.1 200 OK/);
    expect(response.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
  });

  it('h2 over TLS 1.2 gets an AEAD suite, as RFC 9113 §9.2 asks; the same policy as HTTP/1.1', async () => {
    const cipher = await new Promise<{ alpn: string | false; name: string; version: string }>(
      (resolve, reject) => {
        const socket = tlsConnect({
          host: '127.0.0.1',
          port: gw.port,
          ca: gw.certificate.cert,
          servername: 'localhost',
          ALPNProtocols: ['h2'],
          maxVersion: 'TLSv1.2',
        });
        socket.once('secureConnect', () => {
          resolve({ alpn: socket.alpnProtocol ?? false, ...socket.getCipher() });
          socket.destroy();
        });
        socket.once('error', reject);
      },
    );
    expect(cipher.alpn).toBe('h2');
    expect(cipher.version).toBe('TLSv1.2');
    expect(cipher.name).toMatch(/^ECDHE-(ECDSA|RSA)-(AES\d+-GCM-SHA\d+|CHACHA20-POLY1305)$/);
  });

  it('serves HTTP/1.1 to a client that offers no ALPN at all', async () => {
    expect(await negotiate(undefined)).toBe(false);
  });

  it('refuses a client offering only an unknown protocol with the no_application_protocol alert', async () => {
    await expect(negotiate(['spdy/3'])).rejects.toMatchObject({
      code: 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL',
    });
  });
});

describe('an HTTP/2 request goes through the same stages and upstream over HTTP/1.1', () => {
  it('a GET: answered with the listener headers; the upstream gets Host, forwarding facts, no pseudo-headers', async () => {
    const response = await h2Request(session, { ':path': '/v1/orders?limit=2', 'x-custom': 'yes' });
    expect(response.status).toBe(200);
    expectAnswerHeaders(response);
    expect(JSON.parse(response.body)).toEqual({ ok: true, bytes: 0 });
    expect(upstream.records).toHaveLength(1);
    const record = upstream.records[0]!;
    expect(record).toMatchObject({ method: 'GET', url: '/v1/orders?limit=2' });
    expect(record.rawHeaders.filter((_, i) => i % 2 === 0).some((name) => name.startsWith(':'))).toBe(false);
    expect(record.headers['x-custom']).toBe('yes');
    expect(record.headers['x-forwarded-host']).toBe(`localhost:${gw.port}`);
    expect(record.headers['forwarded']).toContain(`host="localhost:${gw.port}"`);
    expect(record.headers['x-request-id']).toBe(response.headers['x-request-id']);
  });

  it('a POST whose body has no Content-Length (h2 needs none) reaches the upstream whole', async () => {
    const response = await h2Request(session, { ':method': 'POST', ':path': '/v1/orders' }, (stream) => {
      stream.write('a'.repeat(300));
      setTimeout(() => stream.end('b'.repeat(200)), 50);
    });
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ ok: true, bytes: 500 });
    expect(upstream.records[0]).toMatchObject({ method: 'POST', bytes: 500, completed: true });
  });

  it('a POST with Content-Length is forwarded with it', async () => {
    const response = await h2Request(
      session,
      { ':method': 'POST', ':path': '/v1/orders', 'content-length': '3', 'content-type': 'application/json' },
      '{ }',
    );
    expect(response.status).toBe(200);
    expect(upstream.records[0]?.headers['content-length']).toBe('3');
  });

  it('several requests share one connection, concurrently', async () => {
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => h2Request(session, { ':path': `/v1/items/${i}` })),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(upstream.records.map((r) => r.url).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `/v1/items/${i}`).sort(),
    );
  });

  it('a route miss is the same 404 problem as over HTTP/1.1', async () => {
    expectProblem(await h2Request(session, { ':path': '/v9/x' }), 404, 'ERR_ROUTE_NOT_FOUND');
  });
});

describe('limits over HTTP/2', () => {
  it('a declared body above the limit: 413 problem, the upstream never called', async () => {
    const response = await h2Request(
      session,
      { ':method': 'POST', ':path': '/v1/x', 'content-length': String(MAX_BODY + 1) },
      (stream) => stream.write('abc'),
    );
    expectProblem(response, 413, 'ERR_PAYLOAD_TOO_LARGE');
    await sleep(50);
    expect(upstream.records).toEqual([]);
  });

  it('a body streamed past the limit without a length: 413 problem, the upstream never gets it whole', async () => {
    const response = await h2Request(session, { ':method': 'POST', ':path': '/v1/x' }, (stream) => {
      let sent = 0;
      const timer = setInterval(() => {
        if (stream.destroyed || stream.closed || sent > 4 * MAX_BODY) return clearInterval(timer);
        stream.write('x'.repeat(300));
        sent += 300;
      }, 20);
      stream.on('close', () => clearInterval(timer));
    });
    expectProblem(response, 413, 'ERR_PAYLOAD_TOO_LARGE');
    await sleep(100);
    expect(upstream.records.every((r) => !r.completed && r.bytes <= MAX_BODY)).toBe(true);
  });

  it('a target longer than maxUriBytes: 414 problem', async () => {
    const response = await h2Request(session, { ':path': `/v1/${'a'.repeat(5000)}` });
    expectProblem(response, 414, 'ERR_URI_TOO_LONG');
    expect(upstream.records).toEqual([]);
  });

  it('a header list past maxHeaderBytes: 431 problem, audited', async () => {
    const response = await h2Request(session, { ':path': '/v1/x', 'x-big': 'a'.repeat(MAX_HEADER) });
    expectProblem(response, 431, 'ERR_HEADERS_TOO_LARGE');
    expect(upstream.records).toEqual([]);
    const requestId = String(response.headers['x-request-id']);
    expect(await auditRecord(requestId)).toMatchObject({
      requestId,
      method: 'GET',
      path: '/v1/x',
      status: 431,
      code: 'ERR_HEADERS_TOO_LARGE',
    });
  });

  it('a header list just within maxHeaderBytes is forwarded (control)', async () => {
    const response = await h2Request(session, { ':path': '/v1/x', 'x-big': 'a'.repeat(MAX_HEADER - 200) });
    expect(response.status).toBe(200);
    expect(upstream.records).toHaveLength(1);
  });

  it('advertises a header-list bound; past what nghttp2 decodes the connection ends, never forwarded', async () => {
    // Twice maxHeaderBytes since issue 31 (HPACK amplification): http2-header-list.test.ts.
    expect(session.remoteSettings.maxHeaderListSize).toBe(2 * MAX_HEADER);
    const cases: [string, [string, string][], number][] = [
      ['one 64 KiB field', [['x-huge', 'a'.repeat(65_536)]], FRAME.DATA],
      [
        'nine 60 KB fields',
        Array.from({ length: 9 }, (_, i) => [`x-h${i}`, 'a'.repeat(60_000)]),
        FRAME.GOAWAY,
      ],
      ['one 200 KB field', [['x-huge', 'a'.repeat(200_000)]], FRAME.GOAWAY],
    ];
    for (const [name, fields, expected] of cases) {
      const raw = await connectRawH2(gw.port, gw.certificate.cert);
      try {
        raw.headers(1, [...requestFields('/v1/x'), ...fields]);
        const answer = await raw.waitFor(
          (f) => (f.streamId === 1 && f.type !== FRAME.HEADERS) || f.type === FRAME.GOAWAY,
        );
        expect(answer?.type, name).toBe(expected);
        if (expected === FRAME.DATA) {
          await raw.waitFor((f) => f.streamId === 1 && f.type === FRAME.DATA && (f.flags & 1) === 1);
          expect(JSON.parse(raw.bodyOf(1)), name).toMatchObject({ status: 431 });
        }
      } finally {
        raw.close();
      }
    }
    await sleep(50);
    expect(upstream.records).toEqual([]);
  });
});

describe('HTTP/2 header rules (RFC 9113 §8.2, §8.3)', () => {
  let raw: RawH2;
  beforeEach(async () => {
    raw = await connectRawH2(gw.port, gw.certificate.cert);
  });
  afterEach(() => raw.close());

  const refused: [string, [string, string][]][] = [
    ['connection', [...requestFields('/v1/x'), ['connection', 'keep-alive']]],
    ['keep-alive', [...requestFields('/v1/x'), ['keep-alive', 'timeout=5']]],
    ['proxy-connection', [...requestFields('/v1/x'), ['proxy-connection', 'keep-alive']]],
    ['transfer-encoding', [...requestFields('/v1/x'), ['transfer-encoding', 'chunked']]],
    ['upgrade', [...requestFields('/v1/x'), ['upgrade', 'websocket']]],
    ['te other than trailers', [...requestFields('/v1/x'), ['te', 'gzip']]],
    ['an upper-case field name', [...requestFields('/v1/x'), ['X-Upper', 'a']]],
    ['no :path', requestFields('/v1/x').filter(([name]) => name !== ':path')],
    ['no :method', requestFields('/v1/x').filter(([name]) => name !== ':method')],
    ['two :path', [...requestFields('/v1/x'), [':path', '/v1/y']]],
    ['an unknown pseudo-header', [...requestFields('/v1/x'), [':protocol-x', 'a']]],
    ['a response pseudo-header', [...requestFields('/v1/x'), [':status', '200']]],
    ['a pseudo-header after a regular field', [['x-a', '1'], ...requestFields('/v1/x')]],
    [
      'a :path not starting with /',
      [...requestFields('v1/x').filter(([n]) => n !== ':path'), [':path', 'v1/x']],
    ],
  ];
  it.each(refused)(
    '%s: the stream is reset with PROTOCOL_ERROR, nothing forwarded',
    async (_name, fields) => {
      raw.headers(1, fields);
      const answer = await raw.waitFor((f) => f.streamId === 1 && f.type !== FRAME.DATA);
      expect(answer?.type).toBe(FRAME.RST_STREAM);
      expect(errorCodeOf(answer!)).toBe(PROTOCOL_ERROR);
      await sleep(30);
      expect(upstream.records).toEqual([]);
    },
  );

  it('te: trailers is the one te allowed, and is not forwarded (hop-by-hop)', async () => {
    raw.headers(1, [...requestFields('/v1/x'), ['te', 'trailers']]);
    const answer = await raw.waitFor((f) => f.streamId === 1 && f.type === FRAME.HEADERS);
    expect(answer).toBeDefined();
    await raw.waitFor((f) => f.streamId === 1 && f.type === FRAME.DATA);
    expect(upstream.records).toHaveLength(1);
    expect(upstream.records[0]?.headers['te']).toBeUndefined();
  });

  it('a host that names another authority than :authority: 400 problem, nothing forwarded', async () => {
    raw.headers(1, [...requestFields('/v1/x'), ['host', 'evil.example']]);
    await raw.waitFor((f) => f.streamId === 1 && f.type === FRAME.DATA && (f.flags & 1) === 1);
    expect(JSON.parse(raw.bodyOf(1))).toMatchObject({ status: 400, code: 'ERR_INVALID_HEADER' });
    expect(upstream.records).toEqual([]);
  });

  it('a host equal to :authority, or a host without :authority, is accepted', async () => {
    raw.headers(1, [...requestFields('/v1/x'), ['host', 'LOCALHOST']]);
    raw.headers(3, [
      [':method', 'GET'],
      [':scheme', 'https'],
      [':path', '/v1/y'],
      ['host', 'api.example'],
    ]);
    await raw.waitFor((f) => f.streamId === 3 && f.type === FRAME.DATA && (f.flags & 1) === 1);
    await raw.waitFor((f) => f.streamId === 1 && f.type === FRAME.DATA && (f.flags & 1) === 1);
    expect(JSON.parse(raw.bodyOf(1))).toMatchObject({ ok: true });
    expect(upstream.records.find((r) => r.url === '/v1/y')?.headers['x-forwarded-host']).toBe('api.example');
  });

  it('cookie fields split as HTTP/2 allows reach the upstream as one Cookie (RFC 9113 §8.2.3)', async () => {
    raw.headers(1, [...requestFields('/v1/x'), ['cookie', 'a=1'], ['x-other', 'o'], ['cookie', 'b=2']]);
    await raw.waitFor((f) => f.streamId === 1 && f.type === FRAME.DATA && (f.flags & 1) === 1);
    const record = upstream.records[0]!;
    const cookies = record.rawHeaders.filter(
      (_, i) => i % 2 === 0 && /^cookie$/i.test(record.rawHeaders[i]!),
    );
    expect(cookies).toHaveLength(1);
    expect(record.headers['cookie']).toBe('a=1; b=2');
  });

  it('a dot segment is refused by the hygiene stage as over HTTP/1.1', async () => {
    raw.headers(1, requestFields('/v1/%2e%2e/admin'));
    await raw.waitFor((f) => f.streamId === 1 && f.type === FRAME.DATA && (f.flags & 1) === 1);
    expect(JSON.parse(raw.bodyOf(1))).toMatchObject({ status: 400, code: 'ERR_BAD_REQUEST' });
    expect(upstream.records).toEqual([]);
  });
});

describe('CONNECT over HTTP/2', () => {
  it('is a 405 problem naming the methods served, and audited', async () => {
    const response = await new Promise<H2Response>((resolve, reject) => {
      const stream = session.request({ ':method': 'CONNECT', ':authority': 'evil.example:443' });
      let head: H2Response['headers'] = {};
      let body = '';
      stream.on('response', (h) => (head = h as H2Response['headers']));
      stream.on('data', (chunk: Buffer) => (body += chunk.toString()));
      stream.on('end', () => resolve({ status: Number(head[':status']), headers: head, body }));
      stream.on('error', reject);
    });
    expectProblem(response, 405, 'ERR_METHOD_NOT_ALLOWED');
    expect(response.headers['allow']).toContain('GET');
    const requestId = String(response.headers['x-request-id']);
    expect(await auditRecord(requestId)).toMatchObject({ requestId, method: 'CONNECT', status: 405 });
    expect(upstream.records).toEqual([]);
  });
});

describe('listener.http2.enabled: false', () => {
  it('offers only http/1.1: an h2-only client is refused in the handshake', async () => {
    const plain = await startTestGateway(upstream.url, { listener: { http2: { enabled: false } } });
    try {
      expect(await negotiate(['h2', 'http/1.1'], plain)).toBe('http/1.1');
      await expect(negotiate(['h2'], plain)).rejects.toMatchObject({
        code: 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL',
      });
    } finally {
      await plain.close();
    }
  });
});

describe('interim responses over HTTP/2', () => {
  it("the upstream's 103 Early Hints reaches an h2 client before the final answer", async () => {
    const hinting = await startRecordingUpstream((req, res) => {
      res.writeEarlyHints({ link: '</a.css>; rel=preload; as=style' });
      req.resume();
      req.on('end', () => res.setHeader('Content-Type', 'application/json').end('{"ok":true}'));
    });
    const edge = await startTestGateway(hinting.url);
    const client = await h2Session(edge.port, edge.certificate.cert);
    try {
      const interim: Record<string, unknown>[] = [];
      const final = await new Promise<H2Response>((resolve, reject) => {
        const stream = client.request({ ':path': '/v1/x' });
        let head: H2Response['headers'] = {};
        let body = '';
        stream.on('headers', (h) => interim.push(h));
        stream.on('response', (h) => (head = h));
        stream.on('data', (chunk: Buffer) => (body += chunk.toString()));
        stream.on('end', () => resolve({ status: Number(head[':status']), headers: head, body }));
        stream.on('error', reject);
      });
      expect(interim).toHaveLength(1);
      expect(interim[0]).toMatchObject({ ':status': 103, link: '</a.css>; rel=preload; as=style' });
      expect(final.status).toBe(200);
      expect(final.body).toBe('{"ok":true}');
    } finally {
      await closeSession(client);
      await edge.close();
      await hinting.close();
    }
  });
});
