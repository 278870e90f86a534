/**
 * The CORS stage (the Fetch standard's CORS protocol), right after the route and before
 * authentication, for the routes with a `cors` key:
 *
 * - A preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered here,
 *   never forwarded: browsers send it without credentials, so it must not meet the
 *   authenticate stage's 401. It is counted first, as an anonymous request from its address
 *   (the rate limiter's `ip` and `principal` policies; the latter keys it `ip:<address>`), by
 *   the rate-limit stage's gate (stages/rate-limit.ts), which the builder hands to this stage.
 *   An allowed origin gets 204 with the Access-Control-Allow-* fields; another gets a 403
 *   problem without any Access-Control-* field, which the browser reports as a CORS failure.
 * - Any other request from an allowed origin gets Access-Control-Allow-Origin (and -Credentials,
 *   -Expose-Headers) on its answer, refusals included, so a browser app can read a 401 or 429
 *   problem. `Vary: Origin` is merged into the upstream's Vary whenever the answer depends on
 *   the origin, with or without one in the request. The upstream's own Access-Control-* fields
 *   give way to the route's policy.
 *
 * Routes without `cors` pass through with one map lookup; with no such route the stage is
 * left out of the pipeline altogether.
 */
import { HttpProblem } from '../../shared/errors.ts';
import { compileCors, type CorsPolicy } from '../cors/policy.ts';
import { problemResponse } from '../pipeline/problem-response.ts';
import type { GatewayContext, GatewayResponse, Stage } from '../pipeline/context.ts';
import { mergeVary } from '../foundation/vary.ts';
import type { RateLimitGate } from './rate-limit.ts';
import type { RouteDefinition } from '../config/schema/routes.ts';

/** Fields of the upstream's own CORS answer, replaced by the route's policy. */
const UPSTREAM_CORS_FIELDS = [
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'access-control-expose-headers',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
];

/** `preflights` counts preflights: the rate-limit stage's gate, handed over by the builder. */
export function createCorsStage(
  routes: readonly RouteDefinition[],
  preflights: RateLimitGate,
): Stage | undefined {
  // By route, not prefix: routes of one prefix may differ by method, host or headers.
  const policies = new Map<RouteDefinition, CorsPolicy>();
  for (const route of routes) if (route.cors !== undefined) policies.set(route, compileCors(route.cors));
  if (policies.size === 0) return undefined;
  return async function cors(ctx, next) {
    const { route } = ctx.upstream;
    const policy = route === undefined ? undefined : policies.get(route);
    if (policy === undefined) return next();
    const headers = ctx.req.headers;
    const origin = headers.origin;
    if (
      origin !== undefined &&
      ctx.req.method === 'OPTIONS' &&
      headers['access-control-request-method'] !== undefined
    ) {
      ctx.response = await preflight(ctx, policy, origin, preflights);
      return;
    }
    await next();
    const response = ctx.response;
    if (response === undefined) return;
    for (const name of UPSTREAM_CORS_FIELDS) delete response.headers[name];
    allowRead(response.headers, policy, origin);
  };
}

async function preflight(
  ctx: GatewayContext,
  policy: CorsPolicy,
  origin: string,
  gate: RateLimitGate,
): Promise<GatewayResponse> {
  // Before authentication, so counted as an anonymous request from its address.
  const decision = await gate.count(ctx);
  const refusal = gate.refusal(ctx, decision);
  ctx.facts.auth = { outcome: 'none', reason: 'cors preflight' };
  let response: GatewayResponse;
  if (refusal !== undefined) response = problemResponse(refusal, ctx.path);
  else if (!policy.allows(origin)) response = problemResponse(notAllowed(origin), ctx.path);
  else {
    response = { status: 204, headers: preflightFields(policy), body: null };
    gate.describe(response.headers, decision);
  }
  allowRead(response.headers, policy, origin);
  return response;
}

function preflightFields(policy: CorsPolicy): Record<string, string> {
  return {
    'access-control-allow-methods': policy.allowMethods,
    'access-control-allow-headers': policy.allowHeaders,
    'access-control-max-age': policy.maxAge,
    // The browser's preflight cache follows Access-Control-Max-Age; HTTP caches store nothing.
    'cache-control': 'no-store',
  };
}

function notAllowed(origin: string): HttpProblem {
  return new HttpProblem(
    'ERR_FORBIDDEN',
    `origin ${origin} is not allowed to call this route from a browser`,
  );
}

/** The fields that let a script of `origin` read the answer; Vary: Origin whenever they depend on it. */
function allowRead(
  headers: Record<string, string | string[]>,
  policy: CorsPolicy,
  origin: string | undefined,
): void {
  if (!policy.anyOrigin) mergeVary(headers, 'Origin');
  if (origin === undefined || !policy.allows(origin)) return;
  headers['access-control-allow-origin'] = policy.anyOrigin ? '*' : origin;
  if (policy.credentials) headers['access-control-allow-credentials'] = 'true';
  if (policy.exposeHeaders !== undefined) headers['access-control-expose-headers'] = policy.exposeHeaders;
}
