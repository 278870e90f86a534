/**
 * A request the HTTP parser refused before it became a request: answered as a problem document
 * like every other answer of the service, not Node's bare status line. A head past the limit
 * is the one the gateway can meet, and it relays the answer to its client, so it must say
 * what it is: a 431 problem.
 */
import type { Duplex } from 'node:stream';
import { HttpProblem, PROBLEM_CONTENT_TYPE, errorTable, type ErrorCode } from '../../shared/errors.ts';

/** Node's own choice of status per parser error (its default clientError handler), as codes. */
const REFUSALS: Record<string, [ErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: [
    'ERR_HEADERS_TOO_LARGE',
    'The request line and headers are larger than the service takes.',
  ],
  ERR_HTTP_REQUEST_TIMEOUT: ['ERR_REQUEST_TIMEOUT', 'The request head did not arrive in time.'],
};

export function answerUnparsed(error: NodeJS.ErrnoException, socket: Duplex): void {
  // A connection the peer reset or already closed has no one to tell.
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [code, detail] = REFUSALS[error.code ?? ''] ?? [
    'ERR_BAD_REQUEST' as const,
    'The request could not be parsed as HTTP/1.1.',
  ];
  const problem = new HttpProblem(code, detail);
  const body = JSON.stringify(problem.toDocument());
  socket.end(
    `HTTP/1.1 ${problem.status} ${errorTable[code].title}\r\n` +
      `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
