/**
 * First stage: every request gets an id that logs, the upstream and the client all see.
 * A well-formed `X-Request-Id` from the client is kept so that ids correlate across
 * systems; anything else is replaced, never refused, because the id is ours to choose.
 */
import { randomUUID } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import type { Stage } from '../pipeline.ts';

export const RequestIdConfigSchema = Type.Object(
  {
    acceptFromClient: Type.Boolean({
      default: true,
      description: 'Keep a well-formed X-Request-Id sent by the client instead of generating one.',
    }),
  },
  { additionalProperties: false, default: {}, description: 'Request id stage.' },
);
export type RequestIdConfig = Static<typeof RequestIdConfigSchema>;

export const REQUEST_ID_HEADER = 'x-request-id';
/** Long enough for UUIDs and trace ids, narrow enough to be safe in logs and headers. */
const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

export function createRequestIdStage(config: RequestIdConfig): Stage {
  return async function requestId(ctx, next) {
    const sent = config.acceptFromClient ? ctx.req.headers[REQUEST_ID_HEADER] : undefined;
    ctx.requestId = typeof sent === 'string' && WELL_FORMED.test(sent) ? sent : randomUUID();
    ctx.log = ctx.log.child({ requestId: ctx.requestId });
    // Set now so that a problem answered by any later stage carries it too.
    ctx.res.setHeader(REQUEST_ID_HEADER, ctx.requestId);
    await next();
    // The upstream may echo its own id; the client gets the one its logs will show.
    if (ctx.response !== undefined) ctx.response.headers[REQUEST_ID_HEADER] = ctx.requestId;
  };
}
