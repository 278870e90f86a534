/**
 * Request framing checks the HTTP parser leaves to us, and the hop-by-hop header rules.
 *
 * Node's parser (llhttp, strict mode) already refuses Content-Length with Transfer-Encoding,
 * duplicate Content-Length, obs-fold, bad chunk sizes and control characters; those arrive as
 * `clientError` and are answered by {@link clientErrorProblem}. What it accepts and we must not
 * is checked by {@link checkRequestFraming} on `rawHeaders`, where duplicates are still visible.
 */
import { METHODS } from 'node:http';
import { HttpProblem } from '../../shared/errors.ts';
import type { ClientRequest } from '../pipeline/client-request.ts';
import { isHttp2Request } from './http2.ts';

/** Fields whose duplicates let two parties disagree about the request. */
const SINGLETON_FIELDS = ['host', 'content-length', 'transfer-encoding', 'authorization'] as const;
type SingletonField = (typeof SINGLETON_FIELDS)[number];

/**
 * How often each singleton field appears in the raw headers, duplicates still visible. A name
 * is lowercased and compared only when its length is one of theirs: most fields of a request
 * are skipped on their length alone (this ran for every request, a keyed lookup per field).
 */
function singletonCounts(raw: readonly string[]): Record<SingletonField, number> {
  const counts = { host: 0, 'content-length': 0, 'transfer-encoding': 0, authorization: 0 };
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] ?? '';
    switch (name.length) {
      case 4:
        if (name.toLowerCase() === 'host') counts.host += 1;
        break;
      case 13:
        if (name.toLowerCase() === 'authorization') counts.authorization += 1;
        break;
      case 14:
        if (name.toLowerCase() === 'content-length') counts['content-length'] += 1;
        break;
      case 17:
        if (name.toLowerCase() === 'transfer-encoding') counts['transfer-encoding'] += 1;
        break;
    }
  }
  return counts;
}

/**
 * Throws a 400 problem for a request whose framing or target the upstream could read
 * differently than we do, and a 414 for a target longer than the upstream would take. Runs
 * before routing, so nothing of such a request is forwarded.
 */
export function checkRequestFraming(
  req: ClientRequest,
  /** The target without its query, as the request context already holds it. */
  path: string,
  limits: { maxUriBytes: number },
): void {
  // The parser hands the target over as one byte per character (latin1): length is bytes.
  if ((req.url ?? '').length > limits.maxUriBytes) {
    throw new HttpProblem('ERR_URI_TOO_LONG', `request target exceeds ${limits.maxUriBytes} bytes`);
  }
  const http2 = isHttp2Request(req);
  // RFC 9110 §6.2: HTTP/1.1's parser takes any `HTTP/x.y` line; only 1.x is spoken there.
  if (!http2 && req.httpVersionMajor !== 1) throw versionNotSupported();
  const expectation = req.headers.expect;
  // RFC 9110 §10.1.1: 100-continue is the only expectation defined, and the listener meets it.
  if (expectation !== undefined && expectation.trim().toLowerCase() !== '100-continue')
    throw new HttpProblem('ERR_EXPECTATION_FAILED', 'the only expectation served is 100-continue', {
      extensions: { errors: [{ header: 'expect', detail: 'only 100-continue is served' }] },
    });
  const counts = singletonCounts(req.rawHeaders);
  const hosts = counts.host;
  if (http2) {
    // RFC 9110 §9.1: methods are case-sensitive tokens, and nghttp2 passes any token on. Only
    // what HTTP/1.1's parser takes goes further: `post` would dodge a policy matched on POST,
    // and `get` would be taken for an unsafe method that purges the cache.
    if (!KNOWN_METHODS.has(req.method ?? '')) throw methodNotImplemented(req.method ?? '');
    checkAuthority(req, hosts);
  } else if (hosts !== 1) {
    // RFC 9112 §3.2: exactly one Host; Node accepts zero or several.
    throw invalidHeader('host', hosts === 0 ? 'Host header is required' : 'Host header must appear once');
  }
  for (const name of SINGLETON_FIELDS) {
    if (counts[name] > 1) throw invalidHeader(name, `${name} must appear at most once`);
  }
  const transferEncoding = req.headers['transfer-encoding'];
  if (transferEncoding !== undefined && transferEncoding.trim().toLowerCase() !== 'chunked') {
    // Any coding but plain chunked would have to be decoded here to find the body's end.
    throw invalidHeader('transfer-encoding', 'only "chunked" transfer coding is accepted');
  }
  const url = req.url ?? '';
  if (!url.startsWith('/')) {
    // Absolute-form and authority-form are for forward proxies; `*` has nothing to route.
    throw new HttpProblem('ERR_BAD_REQUEST', 'request target must be an absolute path');
  }
  if (hasDotSegmentOrBackslash(path)) {
    // `/v1/../admin` must not match the `/v1` route and then be normalised by the upstream.
    throw new HttpProblem('ERR_BAD_REQUEST', 'path must not contain dot segments or backslashes');
  }
}

/**
 * HTTP/2 names the target's authority in `:authority`, or, in a request converted from
 * HTTP/1.1, in `host`. With both, they must name the same one (RFC 9113 §8.3.1), or the
 * upstream, which gets Host, and our routing and cache keys could disagree about the resource.
 */
function checkAuthority(req: ClientRequest, hosts: number): void {
  if (hosts > 1) throw invalidHeader('host', 'Host header must appear once');
  const authority = req.headers[':authority'];
  if (authority === undefined) {
    if (hosts === 0) throw invalidHeader('host', ':authority or Host is required');
    return;
  }
  // The request adapter (http2.ts) copies :authority to host only when the client sent none.
  if (hosts === 1 && req.headers.host?.toLowerCase() !== String(authority).toLowerCase()) {
    throw invalidHeader('host', 'Host must name the same authority as :authority');
  }
}

function hasDotSegmentOrBackslash(path: string): boolean {
  // Neither a dot, a backslash nor an escape that could spell one: nothing to decode.
  if (!/[.%\\]/.test(path)) return false;
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return true;
  }
  if (decoded.includes('\\')) return true;
  return decoded.split('/').some((segment) => segment === '.' || segment === '..');
}

/** The methods HTTP/1.1's parser (llhttp) takes, exactly as spelled there. */
const KNOWN_METHODS: ReadonlySet<string> = new Set(METHODS);

function methodNotImplemented(method: string): HttpProblem {
  return new HttpProblem('ERR_METHOD_NOT_IMPLEMENTED', `method ${JSON.stringify(method)} is not implemented`);
}

function invalidHeader(header: string, detail: string): HttpProblem {
  return new HttpProblem('ERR_INVALID_HEADER', detail, { extensions: { errors: [{ header, detail }] } });
}

/** 431: the request line and headers past `maxHeaderBytes` (HTTP/1.1 parser or HTTP/2 list). */
export const headersTooLarge = () =>
  new HttpProblem('ERR_HEADERS_TOO_LARGE', 'request line and headers exceed the size limit');

/** 505: a request line naming a version other than HTTP/1.x, on an HTTP/1.1 connection. */
export const versionNotSupported = () =>
  new HttpProblem(
    'ERR_HTTP_VERSION_NOT_SUPPORTED',
    'only HTTP/1.0 and HTTP/1.1 are served on this connection',
    {
      headers: { Connection: 'close' },
    },
  );

/** 408: the request not received within its time limit (HTTP/1.1 or an HTTP/2 stream). */
export const requestTimeout = () =>
  new HttpProblem('ERR_REQUEST_TIMEOUT', 'request was not received within the time limit');

/**
 * The answer to a `clientError`: a request the parser refused, or a client too slow to send
 * one. `undefined` means the connection is beyond answering (reset, or TLS never finished).
 */
export function clientErrorProblem(error: NodeJS.ErrnoException): HttpProblem | undefined {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return headersTooLarge();
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return requestTimeout();
    case 'HPE_INVALID_VERSION':
      return versionNotSupported();
    case 'ECONNRESET':
    case 'EPIPE':
      return undefined;
    default:
      if (error.code?.startsWith('HPE_') === true) {
        return new HttpProblem('ERR_BAD_REQUEST', `malformed HTTP request (${error.code})`);
      }
      return undefined;
  }
}
