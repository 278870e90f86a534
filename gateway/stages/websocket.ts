/**
 * The websocket stage: a request asking for a WebSocket ends here, after the stages that
 * judge any request (hygiene, route, CORS, authentication, rate limits) have let it through.
 * On a route with a `websocket` key it is answered with a tunnel (gateway/websocket/); on any
 * other route it is refused with a 400 problem, never upgraded. Other requests pass on.
 *
 * A plain function returning `next()` for those others, nearly every request: no async frame
 * and promise of its own for them (compose.ts hands such a promise on as it is).
 */
import { HttpProblem } from '../../shared/errors.ts';
import type { GatewayContext, Stage } from '../pipeline/context.ts';
import { asksForWebSocket, readHandshake } from '../websocket/handshake.ts';
import type { WebSockets } from '../websocket/websockets.ts';

export function createWebSocketStage(websockets: WebSockets | undefined): Stage {
  return function websocket(ctx, next) {
    if (!asksForWebSocket(ctx.req)) return next();
    return answerHandshake(ctx, websockets);
  };
}

async function answerHandshake(ctx: GatewayContext, websockets: WebSockets | undefined): Promise<void> {
  const config = ctx.upstream.route?.websocket;
  if (config === undefined || websockets === undefined)
    throw new HttpProblem('ERR_BAD_REQUEST', 'this route does not take WebSocket connections');
  ctx.response = await websockets.accept(ctx, readHandshake(ctx.req), config);
}
