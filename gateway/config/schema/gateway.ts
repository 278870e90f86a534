/**
 * The whole gateway config: one key per section, each section's schema in its subsystem's file
 * beside this one. Defaults that depend on the environment (the resource service's origin and
 * TLS files) come from `env`.
 */
import { Type, type Static } from '@sinclair/typebox';
import { AdminConfigSchema } from './admin.ts';
import { CacheConfigSchema } from './cache.ts';
import { CompressionConfigSchema } from './compression.ts';
import { AuthConfigSchema } from './identity.ts';
import { ListenerConfigSchema } from './listener.ts';
import { RateLimitsConfigSchema } from './rate-limit.ts';
import { RequestIdConfigSchema } from './request-id.ts';
import { createRouteDefinitionsSchema, type RouteDefinition } from './routes.ts';
import { TracingConfigSchema } from './tracing.ts';
import { createProxyConfigSchema } from './upstream.ts';

/** The schema of the whole config file. */
export function createGatewayConfigSchema(env: NodeJS.ProcessEnv) {
  return Type.Object(
    {
      listener: ListenerConfigSchema,
      admin: AdminConfigSchema,
      requestId: RequestIdConfigSchema,
      tracing: TracingConfigSchema,
      routes: createRouteDefinitionsSchema(env),
      proxy: createProxyConfigSchema(env),
      auth: AuthConfigSchema,
      rateLimits: { ...RateLimitsConfigSchema, default: {} },
      cache: { ...CacheConfigSchema, default: {} },
      compression: CompressionConfigSchema,
    },
    { additionalProperties: false },
  );
}

/** The config as the file writes it, validated: routes as written. */
export type GatewayConfigInput = Static<ReturnType<typeof createGatewayConfigSchema>>;

/** The validated config, routes with their parents' keys taken, frozen once loaded (load.ts). */
export type GatewayConfig = Omit<GatewayConfigInput, 'routes'> & { routes: RouteDefinition[] };
