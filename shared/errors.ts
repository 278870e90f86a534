/**
 * The one table of error codes shared by the gateway and the resource service (RFC 9457).
 *
 * Tests assert `code`, never message text. Each code has one status and one title; the
 * `detail` says what happened to this request. The problem `type` is a URN built from the
 * code, stable across versions, so clients can switch on it.
 */
import type { ServerResponse } from 'node:http';

export const errorTable = {
  // 400: the request itself is malformed.
  ERR_BAD_REQUEST: { status: 400, title: 'Malformed request' },
  ERR_MALFORMED_JSON: { status: 400, title: 'Malformed JSON body' },
  ERR_INVALID_PARAMETER: { status: 400, title: 'Invalid query parameter' },
  ERR_INVALID_CURSOR: { status: 400, title: 'Invalid pagination cursor' },
  ERR_INVALID_HEADER: { status: 400, title: 'Invalid request header' },
  ERR_CREDENTIAL_IN_URL: { status: 400, title: 'Credentials are not accepted in the URL' },
  // 401 / 403: who you are and what you may do.
  ERR_UNAUTHENTICATED: { status: 401, title: 'Authentication required' },
  ERR_INVALID_TOKEN: { status: 401, title: 'Invalid credentials' },
  ERR_INVALID_DPOP_PROOF: { status: 401, title: 'Invalid DPoP proof' },
  ERR_USE_DPOP_NONCE: { status: 401, title: 'DPoP proof needs a server nonce' },
  ERR_INVALID_ASSERTION: { status: 401, title: 'Missing or invalid identity assertion' },
  ERR_INSUFFICIENT_SCOPE: { status: 403, title: 'Insufficient scope' },
  ERR_FORBIDDEN: { status: 403, title: 'Forbidden' },
  // 404 / 405: what exists. Another customer's resource is ERR_NOT_FOUND too, on purpose.
  ERR_NOT_FOUND: { status: 404, title: 'Resource not found' },
  ERR_ROUTE_NOT_FOUND: { status: 404, title: 'No such route' },
  ERR_METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  ERR_NOT_ACCEPTABLE: { status: 406, title: 'Not acceptable' },
  ERR_REQUEST_TIMEOUT: { status: 408, title: 'Request timeout' },
  // 409 / 412: the request conflicts with the resource's current state.
  ERR_INVALID_TRANSITION: { status: 409, title: 'Status transition not allowed' },
  ERR_ORDER_NOT_PENDING: { status: 409, title: 'Order is no longer pending' },
  ERR_ALREADY_PAID: { status: 409, title: 'Order already paid' },
  ERR_IDEMPOTENCY_IN_FLIGHT: { status: 409, title: 'A request with this idempotency key is in progress' },
  ERR_PRECONDITION_FAILED: { status: 412, title: 'Precondition failed' },
  ERR_PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large' },
  ERR_URI_TOO_LONG: { status: 414, title: 'URI too long' },
  ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  ERR_RANGE_NOT_SATISFIABLE: { status: 416, title: 'Range not satisfiable' },
  // 422: well-formed JSON whose content breaks the rules.
  ERR_VALIDATION: { status: 422, title: 'Validation failed' },
  ERR_IDEMPOTENCY_KEY_REUSED: { status: 422, title: 'Idempotency key reused with a different request' },
  ERR_AMOUNT_MISMATCH: { status: 422, title: 'Payment amount does not match the order total' },
  ERR_EXPECTATION_FAILED: { status: 417, title: 'Expectation failed' },
  ERR_RATE_LIMITED: { status: 429, title: 'Rate limit exceeded' },
  ERR_HEADERS_TOO_LARGE: { status: 431, title: 'Request header fields too large' },
  // 5xx: our side or the upstream's.
  ERR_INTERNAL: { status: 500, title: 'Internal server error' },
  ERR_METHOD_NOT_IMPLEMENTED: { status: 501, title: 'Method not implemented' },
  ERR_BAD_GATEWAY: { status: 502, title: 'Bad gateway' },
  ERR_SERVICE_UNAVAILABLE: { status: 503, title: 'Service unavailable' },
  ERR_UPSTREAM_OVERLOADED: { status: 503, title: 'Upstream at capacity' },
  ERR_NO_HEALTHY_UPSTREAM: { status: 503, title: 'No healthy upstream' },
  ERR_GATEWAY_TIMEOUT: { status: 504, title: 'Gateway timeout' },
  ERR_HTTP_VERSION_NOT_SUPPORTED: { status: 505, title: 'HTTP version not supported' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof errorTable;

/** One entry of a problem's `errors` list: which field, parameter or header, and why. */
export interface ProblemFieldError {
  detail: string;
  /** JSON Pointer (RFC 6901) into the request body, as `#/items/0/quantity`. */
  pointer?: string;
  /** Name of the offending query parameter. */
  parameter?: string;
  /** Name of the offending request header. */
  header?: string;
}

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  code: ErrorCode;
  errors?: ProblemFieldError[];
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** `ERR_NOT_FOUND` → `urn:portico:problem:not-found`. */
export function problemType(code: ErrorCode): string {
  return `urn:portico:problem:${code.slice(4).toLowerCase().replaceAll('_', '-')}`;
}

/**
 * An error that becomes a problem response. Thrown by handlers and stages; the outermost
 * error handler turns it into problem+json. `headers` carries what the status requires
 * (`WWW-Authenticate` on 401, `Allow` on 405, `Retry-After` on 429).
 */
export class HttpProblem extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly detail: string;
  readonly extensions: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail: string,
    options: { extensions?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HttpProblem';
    this.code = code;
    this.status = errorTable[code].status;
    this.detail = detail;
    this.extensions = options.extensions ?? {};
    this.headers = options.headers ?? {};
  }

  toDocument(instance?: string): ProblemDocument {
    return {
      ...this.extensions,
      type: problemType(this.code),
      title: errorTable[this.code].title,
      status: this.status,
      detail: this.detail,
      ...(instance === undefined ? {} : { instance }),
      code: this.code,
    };
  }
}

/** A 422 listing each bad body field. */
export function validationProblem(errors: ProblemFieldError[]): HttpProblem {
  const detail =
    errors.length === 1 ? (errors[0]?.detail ?? 'Invalid body') : `${errors.length} fields are invalid`;
  return new HttpProblem('ERR_VALIDATION', detail, { extensions: { errors } });
}

/**
 * Writes a problem response. Errors are never stored by caches (`no-store`), and the body
 * is small and complete, so it is sent with a Content-Length.
 */
export function sendProblem(res: ServerResponse, problem: HttpProblem, instance?: string): void {
  if (res.headersSent) {
    // Too late for a clean answer: cut the connection so the client sees a failure,
    // never a truncated success.
    res.destroy(problem);
    return;
  }
  const body = JSON.stringify(problem.toDocument(instance));
  // Validators and locations set before the failure describe a success that did not happen.
  for (const name of ['etag', 'last-modified', 'location', 'content-location']) res.removeHeader(name);
  res.statusCode = problem.status;
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
