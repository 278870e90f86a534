/**
 * The service's certificate, key and client CA, read from files and checked together: a key
 * that does not match its certificate, or a CA file without a certificate, fails here, at start
 * or at a reload, and never replaces a working set.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { pemBundle, TLS_OPTIONS } from '../shared/tls-policy.ts';

/** The files that make the service speak HTTPS; with `clientCaFile`, mutual TLS. */
export interface ServiceTlsFiles {
  certFile: string;
  keyFile: string;
  /** CAs whose client certificates are accepted (a PEM file may hold several, for rotation). */
  clientCaFile?: string;
}

/** Secure-context options for `https.createServer` and `setSecureContext`. */
export function loadServiceTls(files: ServiceTlsFiles) {
  const options = {
    ...TLS_OPTIONS,
    cert: readFileSync(files.certFile, 'utf8'),
    key: readFileSync(files.keyFile, 'utf8'),
    ...(files.clientCaFile === undefined ? {} : { ca: pemBundle(readFileSync(files.clientCaFile, 'utf8')) }),
  };
  if (options.ca !== undefined && !options.ca.includes('-----BEGIN CERTIFICATE-----'))
    throw new Error(`${files.clientCaFile}: holds no PEM certificate`);
  // Throws on a key that does not match the certificate, or unreadable PEM.
  createSecureContext(options);
  return options;
}

/** Subject and expiry of the served certificate, for the start-up and reload logs. */
export function describeServiceCertificate(files: ServiceTlsFiles): { subject: string; validTo: string } {
  const x509 = new X509Certificate(readFileSync(files.certFile));
  return { subject: x509.subject, validTo: x509.validTo };
}
