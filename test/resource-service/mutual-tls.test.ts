/**
 * The service's transport seen from the network: with a certificate, a key and a client CA it
 * speaks only mutual TLS. A plain-HTTP caller, a TLS caller without a certificate and one whose
 * certificate another CA issued are refused at the handshake; the gateway's certificate gets in.
 */
import { connect as connectTls } from 'node:tls';
import { connect as connectTcp } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { createTestPki, tlsAgent, type TestPki } from '../support/internal-pki.ts';

let pki: TestPki;
let stranger: TestPki;
let svc: TestService;

beforeAll(async () => {
  pki = await createTestPki('internal-ca');
  stranger = await createTestPki('stranger-ca');
  svc = await startTestService({
    tls: { certFile: pki.server.certFile, keyFile: pki.server.keyFile, clientCaFile: pki.caFile },
    dispatcher: tlsAgent(pki.ca.cert, pki.client),
  });
});
afterAll(async () => {
  await svc?.close();
});

const port = () => Number(new URL(svc.url).port);

/** What a raw TLS handshake with these settings ends in, and the first bytes after a request. */
function tlsExchange(options: { ca: string; cert?: string; key?: string }): Promise<string> {
  return new Promise((resolve) => {
    const socket = connectTls({ host: '127.0.0.1', port: port(), ...options }, () => {
      socket.write('GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n');
    });
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(`error ${error.code ?? error.message}`));
    socket.on('close', () => resolve(received === '' ? 'closed' : received.split('\r\n')[0]!));
  });
}

describe('the service over mutual TLS', () => {
  it('serves HTTPS and answers the gateway, which presents a certificate from the client CA', async () => {
    expect(svc.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const res = await svc.newCustomer().request('GET', '/v1/orders');
    expect(res.status).toBe(200);
    expect(await tlsExchange({ ca: pki.ca.cert, cert: pki.client.cert, key: pki.client.key })).toBe(
      'HTTP/1.1 200 OK',
    );
  });

  it('refuses plain HTTP: no HTTP answer comes back', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = connectTcp({ host: '127.0.0.1', port: port() }, () =>
        socket.write('GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n'),
      );
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      socket.on('error', () => resolve(received));
      socket.on('close', () => resolve(received));
    });
    expect(answer).not.toMatch(/^HTTP\//);
    await expect(request(`http://127.0.0.1:${port()}/healthz`)).rejects.toThrow();
  });

  it('refuses a TLS client without a certificate at the handshake', async () => {
    const answer = await tlsExchange({ ca: pki.ca.cert });
    expect(answer).not.toMatch(/^HTTP\//);
    await expect(request(`${svc.url}/healthz`, { dispatcher: tlsAgent(pki.ca.cert) })).rejects.toThrow();
  });

  it('refuses a client certificate that another CA issued', async () => {
    const answer = await tlsExchange({
      ca: pki.ca.cert,
      cert: stranger.client.cert,
      key: stranger.client.key,
    });
    expect(answer).not.toMatch(/^HTTP\//);
    await expect(
      request(`${svc.url}/healthz`, { dispatcher: tlsAgent(pki.ca.cert, stranger.client) }),
    ).rejects.toThrow();
  });

  it('offers only TLS 1.2 and later', async () => {
    const answer = await tlsExchange({
      ca: pki.ca.cert,
      cert: pki.client.cert,
      key: pki.client.key,
      ...({ maxVersion: 'TLSv1.1', minVersion: 'TLSv1' } as object),
    });
    expect(answer).toMatch(/^error /);
  });
});
