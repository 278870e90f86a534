/**
 * Answer binding on the upstream hop (shared/exchange-id.ts): which origins echo the exchange
 * id, the id each attempt sends, and the check of the answer that comes back.
 *
 * Why an id of its own rather than the request id: a client may choose its X-Request-Id, and
 * two requests with the same one must still not take each other's answers; a retry is another
 * attempt with another id, so that a late answer to the first cannot pass for the second's.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { EXCHANGE_ID_HEADER } from '../../shared/exchange-id.ts';
import { UpstreamFailure } from './upstream-errors.ts';

// Unique per process and attempt: a random prefix per process, a counter per attempt.
const PREFIX = randomBytes(6).toString('base64url');
let counter = 0;

/** A fresh exchange id for one attempt. */
export function nextExchangeId(): string {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `${PREFIX}.${counter.toString(36)}`;
}

/**
 * Checks that a final answer echoes `expected`, and removes the field (it is the hop's, not
 * the client's). Returns the failure to abort the call with, or undefined when it is bound.
 */
export function checkBinding(headers: IncomingHttpHeaders, expected: string | undefined): Error | undefined {
  const echoed = headers[EXCHANGE_ID_HEADER];
  if (echoed === undefined) {
    if (expected === undefined) return undefined;
  } else delete headers[EXCHANGE_ID_HEADER];
  if (expected === undefined || echoed === expected) return undefined;
  return new UpstreamFailure(
    'mismatch',
    new Error('the answer does not echo the exchange id of its request'),
  );
}
