/**
 * Refuses requests whose framing or target could be read differently upstream (request
 * smuggling, duplicate Host, dot segments), before any routing or forwarding.
 */
import type { Stage } from '../pipeline/context.ts';
import { checkRequestFraming } from '../edge/http-hygiene.ts';

export function createHygieneStage(limits: { maxUriBytes: number }): Stage {
  return function hygiene(ctx, next) {
    checkRequestFraming(ctx.req, ctx, limits);
    return next();
  };
}
