/**
 * Request framing checks the HTTP parser leaves to us, and the hop-by-hop header rules.
 *
 * Node's parser (llhttp, strict mode) already refuses Content-Length with Transfer-Encoding,
 * duplicate Content-Length, obs-fold, bad chunk sizes and control characters; those arrive as
 * `clientError` and are answered by {@link clientErrorProblem}. What it accepts and we must not
 * is checked by {@link checkRequestFraming} on `rawHeaders`, where duplicates are still visible.
 */
import { METHODS } from '../../shared/node-http.ts';
import { HttpProblem } from '../../shared/errors.ts';
import type { ClientRequest } from '../pipeline/client-request.ts';
import { isValidHost } from '../foundation/request-target.ts';
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
  /** The target as the context holds it (an absolute-form one's path), and its authority. */
  request: FramedRequest,
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
  } else if (!isValidHost(req.headers.host ?? '')) {
    // RFC 9112 §3.2: a Host that is no `uri-host [":" port]` is a 400, even when replaced.
    throw invalidHeader('host', 'Host must be a host name or address, with an optional port');
  }
  for (const name of SINGLETON_FIELDS) {
    if (counts[name] > 1) throw invalidHeader(name, `${name} must appear at most once`);
  }
  const transferEncoding = req.headers['transfer-encoding'];
  if (transferEncoding !== undefined && transferEncoding.trim().toLowerCase() !== 'chunked') {
    // Any coding but plain chunked would have to be decoded here to find the body's end.
    throw invalidHeader('transfer-encoding', 'only "chunked" transfer coding is accepted');
  }
  checkTarget(req, request);
  if (hasDotSegmentOrBackslash(request.path)) {
    // `/v1/../admin` must not match the `/v1` route and then be normalised by the upstream.
    throw new HttpProblem('ERR_BAD_REQUEST', 'path must not contain dot segments or backslashes');
  }
}

/** What the hygiene stage checks of the request as the context holds it. */
export interface FramedRequest {
  /** Path and query: the origin form, or an absolute-form target's path and query. */
  readonly target: string;
  /** The target without its query. */
  readonly path: string;
  readonly upstream: { readonly authority: string };
}

/**
 * The target in a form served here: origin form, absolute form (its path as `target` by now,
 * its authority a valid host without credentials), or `*` for OPTIONS, which asks about the
 * gateway itself (stages/own-answers.ts). Authority form is for a forward proxy's CONNECT.
 */
function checkTarget(req: ClientRequest, request: FramedRequest): void {
  const { target } = request;
  if (target === '*' && req.method === 'OPTIONS') return;
  if (target.charCodeAt(0) !== 0x2f)
    throw new HttpProblem('ERR_BAD_REQUEST', 'request target must be a path, a URL or, for OPTIONS, *');
  // The absolute form: the path was taken from it (pipeline/context.ts).
  if (target !== req.url) {
    const { authority } = request.upstream;
    if (authority.includes('@'))
      throw new HttpProblem('ERR_CREDENTIAL_IN_URL', 'the request target must not carry credentials');
    if (authority === '' || !isValidHost(authority))
      throw new HttpProblem('ERR_BAD_REQUEST', "the request target's host is not a valid host");
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
    if (!isValidHost(req.headers.host ?? '')) throw invalidHeader('host', 'Host must be a valid host');
    return;
  }
  if (!isValidHost(String(authority))) throw invalidHeader('host', ':authority must be a valid host');
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

// A method token, a target, and an HTTP version: a request line whose method the parser refused.
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}) [\x21-\x7e]+ HTTP\/1\.[01]\r?\n/;

function unknownMethodOf(rawPacket: unknown): string | undefined {
  if (!Buffer.isBuffer(rawPacket)) return undefined;
  return REQUEST_LINE.exec(rawPacket.subarray(0, 8192).toString('latin1'))?.[1];
}

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
export function clientErrorProblem(
  error: NodeJS.ErrnoException & { rawPacket?: unknown },
): HttpProblem | undefined {
  switch (error.code) {
    case 'HPE_INVALID_METHOD': {
      // RFC 9110 §9.1: a method we do not know is a 501, when it is one: a token in a whole
      // request line. Bytes that are no request line at all stay a 400.
      const method = unknownMethodOf(error.rawPacket);
      if (method !== undefined) return methodNotImplemented(method);
      return new HttpProblem('ERR_BAD_REQUEST', `malformed HTTP request (${error.code})`);
    }
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
