/**
 * Answers written straight to a socket, for requests that never became a ServerResponse: the
 * ones the HTTP parser refused, clients too slow to send a head, and CONNECT. Each is a whole
 * problem+json response and a {@link Refusal} for the audit log, like every other answer.
 */
import { randomUUID } from 'node:crypto';
import type { Http2ServerResponse } from 'node:http2';
import type { Duplex } from 'node:stream';
import { HttpProblem, PROBLEM_CONTENT_TYPE, errorTable, type ErrorCode } from '../../shared/errors.ts';
import { SERVED_METHODS } from '../foundation/served-methods.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { unmappedAddress } from '../foundation/trust-proxy.ts';
import { stopReceiving } from './http2.ts';

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

/** The head fields of a refusal: the problem's own, then the ones every answer carries. */
function refusalFields(
  problem: HttpProblem,
  requestId: string,
  hsts: string | undefined,
): [string, string][] {
  return [
    ['Content-Type', PROBLEM_CONTENT_TYPE],
    ['Cache-Control', 'no-store'],
    ['X-Request-Id', requestId],
    [NOSNIFF.name, NOSNIFF.value],
    ...Object.entries(problem.headers),
    ...(hsts === undefined ? [] : [['Strict-Transport-Security', hsts] as [string, string]]),
  ];
}

/** A whole problem response as bytes, for a socket that has no ServerResponse. */
export function rawProblem(problem: HttpProblem, requestId: string, hsts: string | undefined): string {
  const body = JSON.stringify(problem.toDocument());
  const title = errorTable[problem.code].title;
  return [
    `HTTP/1.1 ${problem.status} ${title}`,
    ...refusalFields(problem, requestId, hsts).map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

/**
 * The same answer on an HTTP/2 stream, for a request refused before the pipeline saw it
 * (a header list past the limit, CONNECT, a body too slow to arrive).
 */
export function streamProblem(
  res: StreamAnswer,
  problem: HttpProblem,
  requestId: string,
  hsts: string | undefined,
): void {
  const body = JSON.stringify(problem.toDocument());
  const fields = refusalFields(problem, requestId, hsts).flat();
  res.writeHead(problem.status, [...fields, 'Content-Length', String(Buffer.byteLength(body))]);
  res.end(body);
}

/** What {@link streamProblem} needs of node:http2's compatibility response. */
export interface StreamAnswer {
  writeHead(status: number, headers: string[]): unknown;
  end(body: string): unknown;
}

/**
 * The gateway is no forward proxy: a tunnel to any host would bypass every stage. 405 rather
 * than Node's silent close, so the client is told and the refusal is audited. `Allow` names
 * the methods the gateway forwards.
 */
export function connectProblem(): HttpProblem {
  return new HttpProblem('ERR_METHOD_NOT_ALLOWED', 'CONNECT is not served: this gateway is not a proxy', {
    headers: { Allow: SERVED_METHODS },
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
  return unmappedAddress((socket as { remoteAddress?: string }).remoteAddress ?? 'unknown');
}

/** Answers the listener writes itself, counted and audited like every other answer. */
export interface Refusals {
  /** Writes the problem to an HTTP/1.1 socket and ends it; returns the request id. */
  socket(socket: Duplex, problem: HttpProblem, known: KnownRequest): string;
  /** Answers the problem on an HTTP/2 stream and stops its request; returns the request id. */
  stream(res: Http2ServerResponse, problem: HttpProblem, known: KnownRequest): string;
}

/** What the listener knows of a request it refuses. */
export type KnownRequest = { method?: string; target?: string };

export function createRefusals(
  hsts: string | undefined,
  deps: {
    metrics: Pick<GatewayMetrics, 'observeRequest'>;
    onRefused?: ((refusal: Refusal) => void) | undefined;
  },
): Refusals {
  const account = (clientAddress: string, problem: HttpProblem, known: KnownRequest) => {
    const requestId = randomUUID();
    deps.metrics.observeRequest('none', known.method ?? 'OTHER', problem.status, 0);
    const { status, code } = problem;
    deps.onRefused?.({ requestId, clientAddress, status, code, ...known });
    return requestId;
  };
  return {
    socket(socket: Duplex, problem: HttpProblem, known: KnownRequest): string {
      const requestId = account(socketAddress(socket), problem, known);
      socket.end(rawProblem(problem, requestId, hsts));
      // A client that never reads must not keep the socket.
      setTimeout(() => socket.destroy(), 1000).unref();
      return requestId;
    },
    stream(res: Http2ServerResponse, problem: HttpProblem, known: KnownRequest): string {
      const requestId = account(socketAddress(res.stream.session?.socket ?? res.socket), problem, known);
      streamProblem(res, problem, requestId, hsts);
      stopReceiving(res.stream);
      return requestId;
    },
  };
}
