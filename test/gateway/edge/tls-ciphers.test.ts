/**
 * The edge's TLS 1.2 cipher suites, from a client's side: a client that offers one suite at a
 * time finds out exactly which ones the gateway will negotiate. Only forward-secret AEAD
 * suites (ECDHE with AES-GCM or ChaCha20-Poly1305) may be among them: CBC suites are open to
 * padding-oracle and timing attacks (Lucky Thirteen), and RSA key exchange has no forward
 * secrecy. The same holds after a certificate reload, which builds a new TLS context.
 */
import { copyFileSync } from 'node:fs';
import { connect as tlsConnect, getCiphers } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCertificate } from '../../support/tls.ts';
import type { TestCertificate } from '../../support/tls.ts';
import { startRecordingUpstream, startTestGateway } from '../support/harness.ts';
import type { TestGateway } from '../support/harness.ts';

/** Every TLS 1.2 (and older) suite this OpenSSL knows; TLS 1.3 suites are all AEAD. */
const TLS12_SUITES = getCiphers()
  .filter((name) => !name.startsWith('tls_'))
  .map((name) => name.toUpperCase());
const AEAD_WITH_ECDHE = /^ECDHE-(ECDSA|RSA)-(AES(128|256)-GCM-SHA(256|384)|CHACHA20-POLY1305)$/;

let upstream: Awaited<ReturnType<typeof startRecordingUpstream>>;
let gw: TestGateway;
let ec: TestCertificate;
let rsa: TestCertificate;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  ec = await createTestCertificate('localhost', { keyType: 'ec' });
  rsa = await createTestCertificate('localhost', { keyType: 'rsa' });
  gw = await startTestGateway(upstream.url, {}, {}, ec);
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

/** The suite and protocol a TLS 1.2 client offering only `suite` gets, or null if refused. */
function handshake(port: number, ca: string, suite: string, maxVersion: 'TLSv1.2' | 'TLSv1.3' = 'TLSv1.2') {
  return new Promise<{ suite: string; protocol: string | null } | null>((resolve) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port,
      ca,
      servername: 'localhost',
      minVersion: 'TLSv1.2',
      maxVersion,
      ...(suite === '' ? {} : { ciphers: suite }),
    });
    socket.setTimeout(5000, () => {
      socket.destroy();
      resolve(null);
    });
    socket.once('secureConnect', () => {
      resolve({ suite: socket.getCipher().standardName, protocol: socket.getProtocol() });
      socket.destroy();
    });
    socket.once('error', () => resolve(null));
  });
}

/** The TLS 1.2 suites the gateway negotiates, one offered at a time. */
async function acceptedSuites(ca: string): Promise<string[]> {
  const accepted: string[] = [];
  for (const suite of TLS12_SUITES) {
    if ((await handshake(gw.port, ca, suite)) !== null) accepted.push(suite);
  }
  return accepted;
}

describe('TLS cipher suites at the edge', () => {
  it('negotiates only ECDHE AEAD suites over TLS 1.2, with an ECDSA certificate', async () => {
    const cbc = await handshake(gw.port, ec.cert, 'ECDHE-ECDSA-AES128-SHA');
    expect(cbc).toBeNull();
    const accepted = await acceptedSuites(ec.cert);
    expect(accepted.filter((suite) => !AEAD_WITH_ECDHE.test(suite))).toEqual([]);
    expect(accepted).toContain('ECDHE-ECDSA-AES128-GCM-SHA256');
    expect(accepted).toContain('ECDHE-ECDSA-CHACHA20-POLY1305');
    // A client that does not restrict itself still gets TLS 1.3.
    expect((await handshake(gw.port, ec.cert, '', 'TLSv1.3'))?.protocol).toBe('TLSv1.3');
  });

  it('keeps the same list after reloadCertificates, here with an RSA certificate', async () => {
    copyFileSync(rsa.certFile, ec.certFile);
    copyFileSync(rsa.keyFile, ec.keyFile);
    gw.gateway.reloadCertificates();
    expect(await handshake(gw.port, rsa.cert, 'ECDHE-RSA-AES128-SHA')).toBeNull();
    expect(await handshake(gw.port, rsa.cert, 'AES128-GCM-SHA256')).toBeNull();
    const accepted = await acceptedSuites(rsa.cert);
    expect(accepted.filter((suite) => !AEAD_WITH_ECDHE.test(suite))).toEqual([]);
    expect(accepted).toContain('ECDHE-RSA-AES256-GCM-SHA384');
    expect((await handshake(gw.port, rsa.cert, '', 'TLSv1.3'))?.protocol).toBe('TLSv1.3');
  });
});
