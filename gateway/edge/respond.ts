/**
 * Writes the pipeline's response to the client: head and an in-memory body in one write, a
 * streamed body piped as it arrives.
 */
import type { ServerResponse } from 'node:http';
import { constants, Http2ServerResponse } from 'node:http2';
import type { Readable } from 'node:stream';
import { HttpProblem } from '../../shared/errors.ts';
import { gatewayOnlyFields } from '../cache/rules/gateway-fields.ts';
import type { GatewayResponse } from '../pipeline/context.ts';

/** Fields addressed to this gateway alone when no cache config names more (build.ts does). */
const GATEWAY_FIELDS: readonly string[] = gatewayOnlyFields([]);

/**
 * Resolves once the body is out (or the client left); rejects when the body fails.
 * `answerHeaders` (the listener's HSTS and nosniff) go on every answer whose response does not
 * name the field itself. `gatewayFields` never leave: instructions to this gateway (targeted
 * cache control, RFC 9213, and invalidation hints), whichever stages ran; this is the one place
 * that strips them.
 */
export function writeResponse(
  res: ServerResponse,
  response: GatewayResponse,
  answerHeaders: Readonly<Record<string, string>> = {},
  gatewayFields: readonly string[] = GATEWAY_FIELDS,
): Promise<void> {
  const { status, headers } = response;
  // A body that broke before anything of its answer went out (the upstream's framing error
  // came with its first bytes): the client gets a 502 problem, not a head and then a cut.
  const unsent = response.bufferedBody === undefined ? response.body : null;
  if (unsent !== null && (unsent.errored !== null || (unsent.destroyed && !unsent.readableEnded)))
    return Promise.reject(brokenBeforeHead());
  // Deleted only when present: a delete turns the object into a slow dictionary to iterate.
  for (const field of gatewayFields) if (headers[field] !== undefined) delete headers[field];
  res.writeHead(status, flatHeaders(headers, answerHeaders));
  // A body already in memory goes out in one write with the head; `body` is not read, so its
  // stream is never made (context.ts, bufferedResponse).
  if (response.bufferedBody !== undefined) {
    res.end(response.bufferedBody);
    return Promise.resolve();
  }
  const body = response.body;
  if (body === null) {
    res.end();
    return Promise.resolve();
  }
  return relay(body, res);
}

/**
 * Name, value, name, value: the form `writeHead` takes without a `setHeader` per field (with
 * an object, or after any `setHeader`, Node copies each field into its own header store
 * first: ~4% of the bytes the gateway allocated under load).
 */
function flatHeaders(
  headers: Record<string, string | string[]>,
  answerHeaders: Readonly<Record<string, string>>,
): string[] {
  const flat: string[] = [];
  for (const name in answerHeaders) if (!(name in headers)) flat.push(name, answerHeaders[name]!);
  for (const name in headers) {
    const value = headers[name]!;
    if (typeof value === 'string') flat.push(name, value);
    else for (const one of value) flat.push(name, one);
  }
  return flat;
}

/**
 * Streams a response body to the client. `pipe` rather than `stream.pipeline`: pipeline
 * allocates an AbortController and a DOMException per call, a measurable share of the
 * gateway's per-request CPU, for cleanup that two listeners do here.
 */
function relay(body: Readable, res: ServerResponse): Promise<void> {
  // The body may have failed while stages still held it: piping a destroyed stream would
  // wait forever for an end that never comes.
  if (body.errored !== null) return Promise.reject(body.errored);
  if (body.destroyed && !body.readableEnded) return Promise.reject(new Error('response body destroyed'));
  return new Promise((resolve, reject) => {
    const onClose = () => {
      // The client went away first: stop reading the upstream (undici then aborts it).
      if (!res.writableFinished) body.destroy();
      resolve();
    };
    res.once('close', onClose);
    body.once('error', (error) => {
      res.off('close', onClose);
      reject(error);
    });
    body.pipe(res);
  });
}

/** Bodies are the upstream's (a stored body cannot fail): one that broke is a bad gateway. */
function brokenBeforeHead(): HttpProblem {
  return new HttpProblem('ERR_BAD_GATEWAY', 'the upstream answer broke before it could be sent');
}

/**
 * Ends an answer that broke after its head went out so that no client can take it for a
 * whole one. HTTP/1.1: the connection is cut (no last chunk, or fewer bytes than the
 * Content-Length). HTTP/2: RST_STREAM INTERNAL_ERROR. Not `destroy()` without an error, which
 * node:http2 sends as RST_STREAM NO_ERROR: curl and browsers take that, after the last DATA
 * they got, for the end of a complete answer (exit 0 with a truncated body).
 */
export function cutResponse(res: ServerResponse): void {
  if ((res as unknown) instanceof Http2ServerResponse) {
    const { stream } = res as unknown as Http2ServerResponse;
    if (!stream.destroyed) stream.close(constants.NGHTTP2_INTERNAL_ERROR);
    return;
  }
  res.destroy();
}
