/**
 * The one place that sets the order of the gateway's stages. Requests pass them top to
 * bottom; responses come back bottom to top; the proxy is terminal.
 *
 *   request-id → hygiene → route → [authenticate] → [rate-limit] → [cache] → proxy
 *
 * Bracketed stages belong to later issues and slot in where they are named.
 */
import type { AssertionKey } from '../shared/identity-assertion.ts';
import type { GatewayConfig } from './config.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { Stage } from './pipeline.ts';
import { createHygieneStage } from './stages/hygiene.ts';
import { createProxyStage } from './stages/proxy.ts';
import { createRequestIdStage } from './stages/request-id.ts';
import { createRouteStage } from './stages/route.ts';
import type { Upstreams } from './upstreams.ts';

export interface StageDeps {
  upstreams: Upstreams;
  metrics: GatewayMetrics;
  assertionKeys?: readonly AssertionKey[];
}

export function createStages(config: GatewayConfig, deps: StageDeps): Stage[] {
  return [
    // First, so that every answer, refusals included, carries the id.
    createRequestIdStage(config.requestId),
    // Before anything reads the path or headers: smuggled or ambiguous requests stop here.
    createHygieneStage(),
    createRouteStage(config.routes),
    // authenticate (identity issue): sets ctx.principal, or answers 401 for auth: required.
    createProxyStage(config.proxy, {
      upstreams: deps.upstreams,
      metrics: deps.metrics,
      maxBodyBytes: config.listener.limits.maxBodyBytes,
      ...(deps.assertionKeys === undefined ? {} : { assertionKeys: deps.assertionKeys }),
    }),
  ];
}
