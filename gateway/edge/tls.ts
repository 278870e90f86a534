/**
 * Certificates for the HTTPS listener: loading, checking, and the development certificate.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { generateSelfSigned } from '../../shared/self-signed.ts';
import { TLS_OPTIONS } from '../../shared/tls-policy.ts';

/** PEM certificate chain and private key, as read from disk. */
export interface CertificatePair {
  cert: string;
  key: string;
}

// One TLS policy for the edge and the internal hop (shared/tls-policy.ts).
export { CIPHER_SUITES, TLS_OPTIONS } from '../../shared/tls-policy.ts';

/**
 * Reads and checks a certificate and key: the key must match the certificate, which
 * `createSecureContext` verifies, so a bad pair fails here and never replaces a good one.
 */
export function loadCertificate(certFile: string, keyFile: string): CertificatePair & { keyType: string } {
  const pair = { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
  createSecureContext({ ...TLS_OPTIONS, ...pair });
  const key = createPrivateKey(pair.key);
  const curve = key.asymmetricKeyDetails?.namedCurve;
  return { ...pair, keyType: curve === undefined ? (key.asymmetricKeyType ?? 'unknown') : `ec ${curve}` };
}

/** Subject and validity of a PEM certificate, for the start-up and reload logs. */
export function describeCertificate(cert: string): {
  subject: string;
  validTo: string;
  fingerprint256: string;
} {
  const x509 = new X509Certificate(cert);
  return { subject: x509.subject, validTo: x509.validTo, fingerprint256: x509.fingerprint256 };
}

/**
 * The self-signed `localhost` certificate of a data dir, created on first use (ECDSA P-256).
 * Development only (shared/self-signed.ts).
 */
export async function ensureDevCertificate(dataDir: string): Promise<{ certFile: string; keyFile: string }> {
  const dir = join(dataDir, 'tls');
  const certFile = join(dir, 'localhost.crt');
  const keyFile = join(dir, 'localhost.key');
  if (existsSync(certFile) && existsSync(keyFile)) return { certFile, keyFile };
  const pem = await generateSelfSigned();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Key first, each renamed into place whole: a reader never sees half a file.
  writeFileSync(`${keyFile}.tmp`, pem.key, { mode: 0o600 });
  renameSync(`${keyFile}.tmp`, keyFile);
  writeFileSync(`${certFile}.tmp`, pem.cert);
  renameSync(`${certFile}.tmp`, certFile);
  return { certFile, keyFile };
}
