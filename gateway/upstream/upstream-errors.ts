/**
 * What went wrong with an upstream, as a metrics label and as the client's problem: a
 * timeout is a 504, anything else that left no usable answer a 502. A certificate the
 * gateway refused (unknown CA, wrong name, expired) or a handshake the upstream refused is
 * `tls`: the request is never retried, and never sent in plain HTTP instead.
 */
import { HttpProblem } from '../../shared/errors.ts';
import type { UpstreamErrorKind } from '../observability/metrics.ts';

/** An upstream answer found unusable after undici accepted it (status out of range). */
export class UpstreamFailure extends Error {
  readonly kind: UpstreamErrorKind;
  override readonly cause: unknown;
  constructor(kind: UpstreamErrorKind, cause: unknown) {
    super('upstream answer unusable');
    this.kind = kind;
    this.cause = cause;
  }
}

/** OpenSSL's verification results, as Node names them in `error.code`. */
const CERTIFICATE_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'HOSTNAME_MISMATCH',
  'EPROTO',
]);

export function errorKind(error: unknown): UpstreamErrorKind {
  const { code, name } = error as { code?: string; name?: string };
  if (code !== undefined && (CERTIFICATE_CODES.has(code) || /^ERR_(TLS|SSL)_/.test(code))) return 'tls';
  switch (code) {
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return 'timeout';
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EAI_AGAIN':
      return 'refused';
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
    case 'UND_ERR_HEADERS_OVERFLOW':
    case 'UND_ERR_INFO':
      return 'malformed';
    default:
      return name === 'HTTPParserError' || code?.startsWith('HPE_') === true ? 'malformed' : 'reset';
  }
}

export function upstreamProblem(kind: UpstreamErrorKind): HttpProblem {
  switch (kind) {
    case 'timeout':
      return new HttpProblem('ERR_GATEWAY_TIMEOUT', 'the upstream did not answer in time');
    case 'refused':
      return new HttpProblem('ERR_BAD_GATEWAY', 'the upstream refused the connection');
    case 'malformed':
      return new HttpProblem('ERR_BAD_GATEWAY', 'the upstream sent a malformed response');
    case 'reset':
      return new HttpProblem('ERR_BAD_GATEWAY', 'the upstream closed the connection without answering');
    case 'tls':
      return new HttpProblem('ERR_BAD_GATEWAY', 'the TLS handshake with the upstream failed');
    case 'mismatch':
      return new HttpProblem('ERR_BAD_GATEWAY', 'the upstream answer was not the answer to this request');
  }
}
