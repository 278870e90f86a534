/**
 * The internal certificate authority of development and tests: a CA that issues the resource
 * service's server certificate and the gateway's client certificate, so that the hop between
 * them is mutual TLS with nothing configured. ECDSA P-256 with SHA-256 throughout.
 *
 * `selfsigned` is a development dependency, imported only when a certificate is made: a
 * production install, which is given its files by variables, never loads it.
 */
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as Selfsigned from 'selfsigned';

/** A PEM certificate and its private key. */
export interface PemPair {
  cert: string;
  key: string;
}

const DAY_MS = 24 * 3600 * 1000;
/** Names the service's certificate answers to on one machine. */
const LOCAL_NAMES = [
  { type: 2 as const, value: 'localhost' },
  { type: 7 as const, ip: '127.0.0.1' },
  { type: 7 as const, ip: '::1' },
];

/**
 * The generator, or an error that says what to do: a production install has no development
 * dependencies, and there the files must be named.
 */
async function loadSelfsigned(): Promise<typeof Selfsigned> {
  try {
    return await import('selfsigned');
  } catch (error) {
    throw new Error(
      'the development CA needs the development dependency selfsigned: name the certificate files ' +
        '(SERVICE_TLS_*, GATEWAY_UPSTREAM_* or proxy.upstreamTls), or install with dev dependencies',
      { cause: error },
    );
  }
}

/** A new CA certificate (basicConstraints cA, keyCertSign) and its key. */
export async function createCertificateAuthority(
  options: { commonName?: string; validDays?: number } = {},
): Promise<PemPair> {
  const { generate } = await loadSelfsigned();
  const pem = await generate(
    [{ name: 'commonName', value: options.commonName ?? 'Portico development CA' }],
    {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      notAfterDate: new Date(Date.now() + (options.validDays ?? 3650) * DAY_MS),
      extensions: [
        { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      ],
    },
  );
  return pemPair(pem);
}

/** PEM text ending in a newline, so that files concatenated into a bundle stay valid PEM. */
function pemPair(pem: { cert: string; private: string }): PemPair {
  return { cert: `${pem.cert.trimEnd()}\n`, key: `${pem.private.trimEnd()}\n` };
}

export interface IssueOptions {
  commonName: string;
  /** `server`: serverAuth with the SANs; `client`: clientAuth only. */
  usage: 'server' | 'client';
  /** DNS names the server certificate answers to, beside localhost, 127.0.0.1 and ::1. */
  dnsNames?: string[];
  validDays?: number;
  /** For tests of expiry: a certificate valid from this date. */
  notBefore?: Date;
  notAfter?: Date;
}

/** A leaf certificate signed by `ca`. */
export async function issueCertificate(ca: PemPair, options: IssueOptions): Promise<PemPair> {
  const { generate } = await loadSelfsigned();
  const notBefore = options.notBefore ?? new Date(Date.now() - 60_000);
  // Named hosts (a Kubernetes Service, a compose service) and always this machine's loopback.
  const altNames = [
    ...(options.dnsNames ?? [])
      .filter((name) => name !== 'localhost')
      .map((value) => ({ type: 2 as const, value })),
    ...LOCAL_NAMES,
  ];
  const pem = await generate([{ name: 'commonName', value: options.commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: notBefore,
    notAfterDate: options.notAfter ?? new Date(notBefore.getTime() + (options.validDays ?? 825) * DAY_MS),
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      options.usage === 'server'
        ? { name: 'extKeyUsage', serverAuth: true }
        : { name: 'extKeyUsage', clientAuth: true },
      ...(options.usage === 'server' ? [{ name: 'subjectAltName' as const, altNames }] : []),
    ],
  });
  return pemPair(pem);
}

/** Where the development PKI of a data dir lives. */
export interface DevPkiFiles {
  caFile: string;
  serviceCertFile: string;
  serviceKeyFile: string;
  clientCertFile: string;
  clientKeyFile: string;
}

/** The paths, whether or not the files exist yet (the gateway's default routes name them). */
export function devPkiFiles(dataDir: string): DevPkiFiles {
  const dir = join(dataDir, 'tls', 'internal');
  return {
    caFile: join(dir, 'ca.crt'),
    serviceCertFile: join(dir, 'service.crt'),
    serviceKeyFile: join(dir, 'service.key'),
    clientCertFile: join(dir, 'gateway-client.crt'),
    clientKeyFile: join(dir, 'gateway-client.key'),
  };
}

/**
 * The data dir's development PKI, created on first use. The whole set is written in a
 * directory of its own, then renamed into place in one step: the service and the gateway,
 * which may start side by side on one data dir, never see half a set or two different CAs.
 */
export async function ensureDevPki(dataDir: string): Promise<DevPkiFiles> {
  const files = devPkiFiles(dataDir);
  const dir = join(dataDir, 'tls', 'internal');
  if (existsSync(files.clientKeyFile)) return files;
  const ca = await createCertificateAuthority();
  const service = await issueCertificate(ca, { commonName: 'portico-resource-service', usage: 'server' });
  const client = await issueCertificate(ca, { commonName: 'portico-gateway', usage: 'client' });
  const staging = `${dir}.${process.pid}.tmp`;
  mkdirSync(staging, { recursive: true, mode: 0o700 });
  const write = (name: string, text: string, mode = 0o644) =>
    writeFileSync(join(staging, name), text, { mode });
  write('ca.crt', ca.cert);
  // The CA's key stays beside it so that a developer can issue more (docs/operations.md, rotation).
  write('ca.key', ca.key, 0o600);
  write('service.crt', service.cert);
  write('service.key', service.key, 0o600);
  write('gateway-client.crt', client.cert);
  write('gateway-client.key', client.key, 0o600);
  try {
    renameSync(staging, dir);
  } catch (error) {
    // Another process won the race: its set is complete, ours goes.
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(files.clientKeyFile)) throw error;
  }
  return files;
}
