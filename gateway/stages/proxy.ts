/**
 * Terminal stage: the request goes to its route's upstream (upstream/forward.ts) and the
 * upstream's answer becomes the response.
 */
import type { Stage } from '../pipeline/context.ts';
import type { Forward } from '../upstream/forward.ts';

export function createProxyStage(forward: Forward): Stage {
  return async function proxy(ctx) {
    ctx.response = await forward(ctx);
  };
}
