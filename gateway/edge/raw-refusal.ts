/**
 * Answers written straight to a socket, for requests that never became a ServerResponse: the
 * ones the HTTP parser refused, clients too slow to send a head, and CONNECT. Each is a whole
 * problem+json response and a {@link Refusal} for the audit log, like every other answer.
 */
import type { Duplex } from 'node:stream';
import { HttpProblem, PROBLEM_CONTENT_TYPE, errorTable, type ErrorCode } from '../../shared/errors.ts';

/** What is known of a request answered on the socket; never more than its request line told. */
export interface Refusal {
  requestId: string;
  clientAddress: string;
  status: number;
  code: ErrorCode;
  /** Absent when the request line never arrived whole enough to tell (a slow or cut head). */
  method?: string;
  /** The request target as sent (the audit log drops its query). */
  target?: string;
}

/** Sent on every answer of the gateway: a browser must not guess a type we did not state. */
export const NOSNIFF = { name: 'X-Content-Type-Options', value: 'nosniff' } as const;

/** A whole problem response as bytes, for a socket that has no ServerResponse. */
export function rawProblem(problem: HttpProblem, requestId: string, hsts: string | undefined): string {
  const body = JSON.stringify(problem.toDocument());
  const title = errorTable[problem.code].title;
  return [
    `HTTP/1.1 ${problem.status} ${title}`,
    `Content-Type: ${PROBLEM_CONTENT_TYPE}`,
    'Cache-Control: no-store',
    `X-Request-Id: ${requestId}`,
    `${NOSNIFF.name}: ${NOSNIFF.value}`,
    ...Object.entries(problem.headers).map(([name, value]) => `${name}: ${value}`),
    ...(hsts === undefined ? [] : [`Strict-Transport-Security: ${hsts}`]),
    'Connection: close',
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

/**
 * The gateway is no forward proxy: a tunnel to any host would bypass every stage. 405 rather
 * than Node's silent close, so the client is told and the refusal is audited. `Allow` names
 * the methods the gateway forwards.
 */
export function connectProblem(): HttpProblem {
  return new HttpProblem('ERR_METHOD_NOT_ALLOWED', 'CONNECT is not served: this gateway is not a proxy', {
    headers: { Allow: 'GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE' },
  });
}

// A method token and the target after it; the target may be cut short (431 on a long line).
const REQUEST_LINE = /^([A-Z]{1,20}) ([\x21-\x7e]+)/;

/**
 * Method and target from the bytes the parser was reading when it failed. Only trusted when
 * they are the connection's first bytes (no earlier request on it): later, the chunk may
 * begin with a request already answered, or in the middle of a head.
 */
export function requestLineOf(rawPacket: unknown): { method?: string; target?: string } {
  if (!Buffer.isBuffer(rawPacket)) return {};
  const match = REQUEST_LINE.exec(rawPacket.subarray(0, 1024).toString('latin1'));
  if (match === null) return {};
  return { method: match[1]!, target: match[2]! };
}

/** The peer's address as the pipeline states it (client-ip.ts): IPv4 without its IPv6 prefix. */
export function socketAddress(socket: Duplex): string {
  const address = (socket as { remoteAddress?: string }).remoteAddress ?? 'unknown';
  return address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
}
