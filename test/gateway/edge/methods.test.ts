/**
 * Methods over HTTP/1.1 (RFC 9110 §9.1, §9.3.7, issue 35). A method the gateway does not know is
 * a 501 problem (it was Node's parser's 400), as it already was over HTTP/2; `OPTIONS *` asks
 * about the server itself and is answered by the gateway (it was a 400).
 */
import { describe, expect, it } from 'vitest';
import { closeSession, h2Request, h2Session } from '../support/h2-client.ts';
import { rawRequest, useRecordingGateway } from '../support/harness.ts';

const running = useRecordingGateway();

const ALLOW = 'GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE';
const line = (method: string, target: string) =>
  `${method} ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`;

describe('unknown methods', () => {
  it.each(['FROB', 'BREW', 'get'])('%s: 501 problem, nothing forwarded', async (method) => {
    const before = running.upstream.records.length;
    const response = await rawRequest(
      running.gw.port,
      running.gw.certificate.cert,
      line(method, '/v1/orders'),
    );
    expect(response.status).toBe(501);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(response.body)).toMatchObject({ status: 501, code: 'ERR_METHOD_NOT_IMPLEMENTED' });
    expect(running.upstream.records.length).toBe(before);
  });

  it('bytes that are no request line stay a 400', async () => {
    const response = await rawRequest(
      running.gw.port,
      running.gw.certificate.cert,
      '\x01\x02garbage\r\n\r\n',
    );
    expect(response.status).toBe(400);
  });
});

describe('OPTIONS *', () => {
  it('HTTP/1.1: 200 with the methods the gateway serves, nothing forwarded', async () => {
    const before = running.upstream.records.length;
    const response = await rawRequest(running.gw.port, running.gw.certificate.cert, line('OPTIONS', '*'));
    expect(response.status).toBe(200);
    expect(response.headers.allow).toBe(ALLOW);
    expect(response.headers['content-length']).toBe('0');
    expect(running.upstream.records.length).toBe(before);
  });

  it('HTTP/2: the same', async () => {
    const session = await h2Session(running.gw.port, running.gw.certificate.cert);
    try {
      const response = await h2Request(session, { ':method': 'OPTIONS', ':path': '*' });
      expect(response.status).toBe(200);
      expect(response.headers.allow).toBe(ALLOW);
    } finally {
      await closeSession(session);
    }
  });

  it('another method with *: 400', async () => {
    const response = await rawRequest(running.gw.port, running.gw.certificate.cert, line('GET', '*'));
    expect(response.status).toBe(400);
  });
});
