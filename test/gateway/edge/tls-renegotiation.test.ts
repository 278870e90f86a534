/**
 * Client-initiated TLS 1.2 renegotiation, from the attacker's side: each renegotiation makes
 * the server do a full handshake's public-key work again on one connection, for almost no cost
 * to the client (the THC-SSL-DoS pattern), and HTTP/2 forbids it anyway (RFC 9113 §9.2.1).
 * The edge refuses it; TLS 1.3 has no renegotiation at all.
 */
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { useRecordingGateway } from '../support/harness.ts';

const running = useRecordingGateway();

/** Opens a TLS 1.2 connection, then asks to renegotiate: 'renegotiated' or what stopped it. */
function renegotiate(): Promise<string> {
  return new Promise((resolve) => {
    const socket: TLSSocket = tlsConnect({
      host: '127.0.0.1',
      port: running.gw.gateway.addresses.https.port,
      ca: running.gw.certificate.cert,
      servername: 'localhost',
      maxVersion: 'TLSv1.2',
      ALPNProtocols: ['http/1.1'],
    });
    const done = (outcome: string) => {
      resolve(outcome);
      socket.destroy();
    };
    socket.setTimeout(5000, () => done('timeout'));
    socket.once('error', (error) => done(`error: ${error.message}`));
    socket.once('close', () => done('closed'));
    socket.once('secureConnect', () => {
      const started = socket.renegotiate({ rejectUnauthorized: true }, (error) =>
        done(error === null ? 'renegotiated' : `error: ${error.message}`),
      );
      if (started === false) done('not started');
      // A renegotiation completes only as data flows: ask for something.
      socket.write('GET /v1/x HTTP/1.1\r\nHost: localhost\r\n\r\n');
    });
  });
}

describe('TLS 1.2 renegotiation', () => {
  it('is refused when the client asks for it', async () => {
    const outcome = await renegotiate();
    expect(outcome).not.toBe('renegotiated');
    expect(outcome).not.toBe('timeout');
  });
});
