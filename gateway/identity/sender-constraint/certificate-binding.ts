/**
 * Certificate-bound access tokens (RFC 8705 §3): the token's `cnf.x5t#S256` must be the
 * SHA-256 thumbprint (base64url of the DER) of the client certificate of the TLS connection
 * the request came on. The handshake proved the client holds that certificate's key; the
 * issuer bound the token to it. Whether the certificate chains to a CA is not this check's:
 * the binding is to this very certificate, self-signed ones included (RFC 8705 §2.2).
 */
import { hash as digest, type X509Certificate } from 'node:crypto';

/** What the check reads of a connection: node:tls's, also through HTTP/2's socket proxy. */
export interface CertificateSocket {
  readonly getPeerX509Certificate?: () => X509Certificate | undefined;
}

/** The thumbprint of the connection's client certificate; undefined when it presented none. */
export function presentedThumbprint(socket: unknown): string | undefined {
  const getter = (socket as CertificateSocket | undefined)?.getPeerX509Certificate;
  if (typeof getter !== 'function') return undefined;
  const certificate = getter.call(socket);
  return certificate === undefined ? undefined : digest('sha256', certificate.raw, 'base64url');
}
