/**
 * First stage: every request gets an id of the gateway's own, unique, that its request log line
 * and audit record are keyed by. A well-formed `X-Request-Id` from the client is kept beside it
 * (`clientRequestId`) so that ids correlate across systems: it is the one echoed and sent
 * upstream. It never replaces the gateway's id in the log or the audit record, since a client
 * may send any id, another request's included. Anything malformed is ignored, never refused.
 */
import { randomUUID } from 'node:crypto';
import { isWellFormedRequestId } from '../../shared/request-id.ts';
import { REQUEST_ID_HEADER } from '../foundation/header-names.ts';
import type { Stage } from '../pipeline/context.ts';
import type { RequestIdConfig } from '../config/schema/request-id.ts';

export function createRequestIdStage(config: RequestIdConfig): Stage {
  return async function requestId(ctx, next) {
    const sent = config.acceptFromClient ? ctx.req.headers[REQUEST_ID_HEADER] : undefined;
    ctx.upstream.requestId = randomUUID();
    ctx.upstream.clientRequestId = isWellFormedRequestId(sent) ? sent : undefined;
    await next();
    // On every answer, refusals included; the upstream may echo its own id, and the client
    // gets the one it sent, or else the gateway's.
    if (ctx.response !== undefined) ctx.response.headers[REQUEST_ID_HEADER] = ctx.upstream.correlationId;
  };
}
