/**
 * First stage: every request gets an id that logs, the upstream and the client all see.
 * A well-formed `X-Request-Id` from the client is kept so that ids correlate across
 * systems; anything else is replaced, never refused, because the id is ours to choose.
 */
import { randomUUID } from 'node:crypto';
import { isWellFormedRequestId } from '../../shared/request-id.ts';
import { REQUEST_ID_HEADER } from '../foundation/header-names.ts';
import type { Stage } from '../pipeline/context.ts';
import type { RequestIdConfig } from '../config/schema/request-id.ts';

export function createRequestIdStage(config: RequestIdConfig): Stage {
  return async function requestId(ctx, next) {
    const sent = config.acceptFromClient ? ctx.req.headers[REQUEST_ID_HEADER] : undefined;
    const id = isWellFormedRequestId(sent) ? sent : randomUUID();
    ctx.upstream.requestId = id;
    await next();
    // On every answer, refusals included; the upstream may echo its own id, and the client
    // gets the one its logs will show.
    if (ctx.response !== undefined) ctx.response.headers[REQUEST_ID_HEADER] = id;
  };
}
