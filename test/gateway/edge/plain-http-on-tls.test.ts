/**
 * Plain HTTP sent to the HTTPS port (`curl http://host:8443/`) is answered with a 400 that
 * says to use HTTPS, as Go's servers do (nginx answers 497), instead of a dropped connection
 * the operator has to guess about. TLS on the same port, both protocols, is unchanged, and
 * a client that connects and says nothing is still cut by the handshake deadline.
 */
import { connect } from 'node:net';
import { connect as http2Connect } from 'node:http2';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let upstream: RecordingUpstream;
let gw: TestGateway;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(upstream.url, { listener: { limits: { headersTimeoutMs: 1000 } } });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

/** Writes `bytes` over plain TCP and reads until the gateway closes. */
function plain(port: number, bytes: string, timeoutMs = 5000): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1', () => {
      if (bytes !== '') socket.write(bytes);
    });
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`not closed within ${timeoutMs} ms; got ${JSON.stringify(text)}`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, ms: performance.now() - started });
    });
  });
}

describe('plain HTTP on the HTTPS port', () => {
  it('is answered 400 with a short plain explanation naming https://', async () => {
    const { text } = await plain(gw.port, 'GET /v1/orders HTTP/1.1\r\nHost: localhost:8443\r\n\r\n');
    const [head = '', body = ''] = text.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(head).toMatch(/\r\ncontent-type: text\/plain; charset=utf-8/i);
    expect(head).toMatch(/\r\nconnection: close/i);
    expect(body).toContain('This port speaks HTTPS');
    expect(body).toContain('https://localhost:8443/v1/orders');
    // Nothing reached the upstream.
    expect(upstream.records.some((record) => record.url === '/v1/orders')).toBe(false);
  });

  it('TLS on the same port still serves HTTP/1.1 and HTTP/2', async () => {
    const one = await request(`${gw.origin}/v1/one`, { dispatcher: gw.agent });
    expect(one.statusCode).toBe(200);
    await one.body.dump();
    const session = http2Connect(gw.origin, { ca: gw.certificate.cert });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const stream = session.request({ ':path': '/v1/two' });
        stream.on('response', (headers) => resolve(Number(headers[':status'])));
        stream.on('error', reject);
        stream.resume();
      });
      expect(status).toBe(200);
    } finally {
      session.close();
    }
  });

  it('a client that sends nothing is cut at the handshake deadline', async () => {
    const { text, ms } = await plain(gw.port, '');
    expect(text).toBe('');
    expect(ms).toBeGreaterThan(800);
    expect(ms).toBeLessThan(4000);
  });
});
