/**
 * Internal PKIs for one test (shared/dev-pki.ts): a CA, the service's server certificate and the
 * gateway's client certificate, written to files as operators give them, plus agents that speak
 * to a mutual-TLS service as the gateway (or as a stranger) would.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { createCertificateAuthority, issueCertificate } from '../../shared/dev-pki.ts';
import type { IssueOptions, PemPair } from '../../shared/dev-pki.ts';
import { TLS_OPTIONS } from '../../shared/tls-policy.ts';

export interface TestPki {
  dir: string;
  ca: PemPair;
  caFile: string;
  server: PemPair & { certFile: string; keyFile: string };
  client: PemPair & { certFile: string; keyFile: string };
  /** Another certificate from this CA, written beside the others. */
  issue(name: string, options: IssueOptions): Promise<PemPair & { certFile: string; keyFile: string }>;
}

/** A CA named `name` with a server (localhost, 127.0.0.1, ::1) and a client certificate. */
export async function createTestPki(name = 'test-ca', dir = mkdtempSync(join(tmpdir(), 'portico-pki-'))) {
  const ca = await createCertificateAuthority({ commonName: name, validDays: 2 });
  const caFile = join(dir, `${name}.crt`);
  writeFileSync(caFile, ca.cert);
  const issue = async (file: string, options: IssueOptions) => {
    const pair = await issueCertificate(ca, { validDays: 1, ...options });
    const certFile = join(dir, `${file}.crt`);
    const keyFile = join(dir, `${file}.key`);
    writeFileSync(certFile, pair.cert);
    writeFileSync(keyFile, pair.key, { mode: 0o600 });
    return { ...pair, certFile, keyFile };
  };
  const server = await issue(`${name}-server`, { commonName: 'portico-resource-service', usage: 'server' });
  const client = await issue(`${name}-client`, { commonName: 'portico-gateway', usage: 'client' });
  const pki: TestPki = { dir, ca, caFile, server, client, issue };
  return pki;
}

/** An undici agent trusting `ca`, presenting `client` when given. */
export function tlsAgent(ca: string, client?: PemPair): Agent {
  return new Agent({
    connect: {
      ca,
      ...(client === undefined ? {} : { cert: client.cert, key: client.key }),
    },
  });
}

export interface TlsUpstream {
  url: string;
  /** The subject CN of each client certificate a request arrived with ('' without one). */
  peers: string[];
  /** Serve another certificate (and trust other client CAs) from the next handshake on. */
  replace(files: { cert: string; key: string; ca: string }): void;
  close(): Promise<void>;
}

/**
 * An HTTPS upstream on 127.0.0.1 that answers 200 `{"ok":true}` and records the client
 * certificate of every request; with `ca` it requires one from that CA (mutual TLS).
 */
export async function startTlsUpstream(options: {
  cert: string;
  key: string;
  ca?: string;
}): Promise<TlsUpstream> {
  const peers: string[] = [];
  const server = createHttpsServer(
    {
      ...TLS_OPTIONS,
      cert: options.cert,
      key: options.key,
      ...(options.ca === undefined ? {} : { ca: options.ca, requestCert: true, rejectUnauthorized: true }),
    },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      peers.push(typeof peer.subject?.CN === 'string' ? peer.subject.CN : '');
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end('{"ok":true}');
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    peers,
    replace: (files) => server.setSecureContext({ ...TLS_OPTIONS, ...files }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
