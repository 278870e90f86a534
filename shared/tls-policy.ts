/**
 * The TLS policy every Portico listener and client shares: TLS 1.2 and later, AEAD suites only.
 * One list, so the edge, the service and the gateway's upstream connections cannot drift apart.
 */
import { constants } from 'node:crypto';

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

/** TLS settings shared by servers' first context and every reload. */
export const TLS_OPTIONS = {
  minVersion: 'TLSv1.2',
  ciphers: CIPHER_SUITES,
  // X25519 first: fastest key exchange; P-256 and P-384 for clients without it.
  ecdhCurve: 'X25519:prime256v1:secp384r1',
  honorCipherOrder: true,
  // No TLS 1.2 renegotiation: a client asking for one makes the server redo a handshake's
  // public-key work on the same connection at almost no cost to itself, and HTTP/2 forbids it
  // (RFC 9113 section 9.2.1). OpenSSL answers such a request with a no_renegotiation alert.
  secureOptions: constants.SSL_OP_NO_RENEGOTIATION,
} as const;

/** The client side of the same policy (the gateway's connections to its upstreams). */
export const TLS_CLIENT_OPTIONS = {
  minVersion: 'TLSv1.2',
  ciphers: CIPHER_SUITES,
  ecdhCurve: 'X25519:prime256v1:secp384r1',
} as const;

/**
 * A CA bundle as read from a file, with a line break between certificates even where a file
 * was concatenated from PEM files without a final newline (`cat old.crt new.crt`), which would
 * otherwise hide every certificate after the first.
 */
export function pemBundle(text: string): string {
  return text.replace(/-----END CERTIFICATE-----[ \t]*-----BEGIN/g, '-----END CERTIFICATE-----\n-----BEGIN');
}
