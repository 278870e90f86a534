/**
 * Requests the gateway answers as their final recipient, before routing:
 * - `OPTIONS *` asks about the server itself (RFC 9110 §9.3.7): 200 with the methods served.
 * - `OPTIONS` with `Max-Forwards: 0` must not be forwarded (§7.6.2): the same answer; a larger
 *   value goes on one less.
 * - `TRACE` is refused (405) whatever `Max-Forwards` says: an upstream echoing it would hand
 *   the client the request as the gateway sent it, its signed identity assertion included
 *   (cross-site tracing), and no API behind the gateway needs it.
 * Other methods ignore `Max-Forwards` (§7.6.2).
 */
import { HttpProblem } from '../../shared/errors.ts';
import { SERVED_METHODS } from '../foundation/served-methods.ts';
import { bufferedResponse, type GatewayContext, type Stage } from '../pipeline/context.ts';

const MAX_FORWARDS = /^[0-9]{1,10}$/;

export function createOwnAnswersStage(): Stage {
  return function ownAnswers(ctx, next) {
    const { method } = ctx.req;
    if (method === 'TRACE') throw traceRefused();
    if (method !== 'OPTIONS') return next();
    if (ctx.target === '*') return answerOptions(ctx);
    // Several fields come joined ("3, 2"): no number, refused like any other.
    const value = ctx.upstream.headers.get('max-forwards')?.trim();
    if (value === undefined) return next();
    if (!MAX_FORWARDS.test(value))
      throw new HttpProblem('ERR_INVALID_HEADER', 'Max-Forwards must be a number', {
        extensions: { errors: [{ header: 'max-forwards', detail: 'must be a decimal integer' }] },
      });
    const hops = Number(value);
    if (hops === 0) return answerOptions(ctx);
    ctx.upstream.headers.set('max-forwards', String(hops - 1));
    return next();
  };
}

/** 200 with what the gateway serves; no body (RFC 9110 §9.3.7 defines none). */
function answerOptions(ctx: GatewayContext): Promise<void> {
  ctx.response = bufferedResponse(200, { allow: SERVED_METHODS, 'content-length': '0' }, Buffer.alloc(0));
  return Promise.resolve();
}

function traceRefused(): HttpProblem {
  return new HttpProblem(
    'ERR_METHOD_NOT_ALLOWED',
    'TRACE is not served: it would echo what the gateway adds',
    {
      headers: { Allow: SERVED_METHODS },
    },
  );
}
