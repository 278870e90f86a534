/** The `proxy` config: how the gateway forwards to its upstreams. */
import { Type, type Static } from '@sinclair/typebox';

export const ProxyConfigSchema = Type.Object(
  {
    trustProxy: Type.Boolean({
      default: false,
      description:
        'Off: Forwarded and X-Forwarded-* sent by the client are dropped and replaced with what this ' +
        'gateway saw. On (only behind a load balancer that sets them): the incoming values are kept and ' +
        'this hop is appended.',
    }),
    connectionsPerUpstream: Type.Integer({
      minimum: 1,
      default: 128,
      description: 'Most connections the pool opens to one upstream origin.',
    }),
    connectTimeoutMs: Type.Integer({
      minimum: 1,
      default: 5000,
      description: 'Time to open an upstream connection before answering 504.',
    }),
    responseTimeoutMs: Type.Integer({
      minimum: 1,
      default: 30000,
      description: 'Time for the upstream to send its response headers before answering 504.',
    }),
    bodyTimeoutMs: Type.Integer({
      minimum: 1,
      default: 30000,
      description:
        'Longest pause between two chunks of the upstream response body; past it the response is cut.',
    }),
    keepAliveTimeoutMs: Type.Integer({
      minimum: 1,
      default: 4000,
      description: 'How long an idle upstream connection is kept (the upstream may announce less).',
    }),
    retries: Type.Integer({
      minimum: 0,
      maximum: 3,
      default: 1,
      description:
        'Retries after a connection failure, only for idempotent methods without a request body ' +
        '(a streamed body cannot be replayed without buffering it).',
    }),
  },
  { additionalProperties: false, default: {}, description: 'Upstream forwarding.' },
);
export type ProxyConfig = Static<typeof ProxyConfigSchema>;
