/**
 * Certificates for the HTTPS listener: loading, checking, and the development certificate.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { generateSelfSigned } from '../../shared/self-signed.ts';

/** PEM certificate chain and private key, as read from disk. */
export interface CertificatePair {
  cert: string;
  key: string;
}

/**
 * The suites offered, TLS 1.3's first (all AEAD). For TLS 1.2 only forward-secret AEAD suites,
 * ECDHE with AES-GCM or ChaCha20-Poly1305, for ECDSA and RSA certificates alike: no CBC suite
 * (padding oracles, Lucky Thirteen) and no RSA key exchange (no forward secrecy). This is
 * Mozilla's "intermediate" list without its DHE suites, which we have no parameters for.
 */
export const CIPHER_SUITES = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** TLS settings shared by the first context and every reload (gateway/start.ts). */
export const TLS_OPTIONS = {
  minVersion: 'TLSv1.2',
  ciphers: CIPHER_SUITES,
  // X25519 first: fastest key exchange; P-256 and P-384 for clients without it.
  ecdhCurve: 'X25519:prime256v1:secp384r1',
  honorCipherOrder: true,
} as const;

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
