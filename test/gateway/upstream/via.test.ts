/**
 * `Via` through the gateway (RFC 9110 §7.6.3, issue 35): a proxy MUST add its own entry to the
 * requests it forwards and the responses it relays, the protocol version as it received the
 * message, after any entries already there. The pseudonym is `proxy.viaName` (`portico`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSession, h2Request, h2Session } from '../support/h2-client.ts';
import {
  rawRequest,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let upstream: RecordingUpstream;
let gw: TestGateway;
let named: TestGateway;
beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.includes('upstream-via') === true) res.setHeader('Via', '1.1 origin-cache');
      res.setHeader('Content-Type', 'application/json');
      res.end('{}');
    });
  });
  gw = await startTestGateway(upstream.url);
  named = await startTestGateway(upstream.url, { proxy: { viaName: 'edge-7' } });
});
afterAll(async () => {
  await gw?.close();
  await named?.close();
  await upstream?.close();
});

const lastRecord = () => upstream.records.at(-1)!;

function http1(port: number, path: string, version = 'HTTP/1.1', extra = ''): ReturnType<typeof rawRequest> {
  return rawRequest(
    port,
    gw.certificate.cert,
    `GET ${path} ${version}\r\nHost: localhost\r\n${extra}Connection: close\r\n\r\n`,
  );
}

describe('Via on the forwarded request', () => {
  it('HTTP/1.1: "1.1 portico"', async () => {
    const response = await http1(gw.port, '/v1/via-plain');
    expect(response.status).toBe(200);
    expect(lastRecord().headers.via).toBe('1.1 portico');
  });

  it('HTTP/1.0: "1.0 portico"', async () => {
    await http1(gw.port, '/v1/via-ten', 'HTTP/1.0');
    expect(lastRecord().headers.via).toBe('1.0 portico');
  });

  it("the client's Via is kept, ours appended", async () => {
    await http1(gw.port, '/v1/via-client', 'HTTP/1.1', 'Via: 1.0 fred, 1.1 p.example.net\r\n');
    expect(lastRecord().headers.via).toBe('1.0 fred, 1.1 p.example.net, 1.1 portico');
  });

  it('HTTP/2: "2 portico"', async () => {
    const session = await h2Session(gw.port, gw.certificate.cert);
    try {
      const response = await h2Request(session, { ':method': 'GET', ':path': '/v1/via-h2', via: '2 edge' });
      expect(response.status).toBe(200);
      expect(lastRecord().headers.via).toBe('2 edge, 2 portico');
      expect(response.headers.via).toBe('1.1 portico');
    } finally {
      await closeSession(session);
    }
  });

  it('the configured pseudonym', async () => {
    const response = await http1(named.port, '/v1/via-named');
    expect(lastRecord().headers.via).toBe('1.1 edge-7');
    expect(response.headers.via).toBe('1.1 edge-7');
  });
});

describe('Via on the relayed response', () => {
  it('added as received from the upstream (HTTP/1.1)', async () => {
    const response = await http1(gw.port, '/v1/via-response');
    expect(response.headers.via).toBe('1.1 portico');
  });

  it("the upstream's Via kept, ours appended", async () => {
    const response = await http1(gw.port, '/v1/upstream-via');
    expect(response.headers.via).toBe('1.1 origin-cache, 1.1 portico');
  });

  it('not on the gateway’s own answers', async () => {
    const response = await http1(gw.port, '/nowhere');
    expect(response.status).toBe(404);
    expect(response.headers.via).toBeUndefined();
  });
});
