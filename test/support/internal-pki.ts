/**
 * Internal PKIs for one test (shared/dev-pki.ts): a CA, the service's server certificate and the
 * gateway's client certificate, written to files as operators give them, plus agents that speak
 * to a mutual-TLS service as the gateway (or as a stranger) would.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { createCertificateAuthority, issueCertificate } from '../../shared/dev-pki.ts';
import type { IssueOptions, PemPair } from '../../shared/dev-pki.ts';

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
