/**
 * The admin listener, on 127.0.0.1 only: liveness, readiness and Prometheus metrics, open to
 * read; the cache purge, which changes the gateway, needs the admin token (purge-guard.ts).
 * It stays open during a drain so that orchestrators see `/readyz` turn 503.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:http';
import { Type, type Static } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { NOSNIFF } from '../edge/raw-refusal.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';

export const AdminConfigSchema = Type.Object(
  {
    readinessTimeoutMs: Type.Integer({
      minimum: 1,
      default: 1000,
      description: 'Time each readiness check (upstream connect, later Redis and JWKS) may take.',
    }),
    stageTiming: Type.Boolean({
      default: true,
      description:
        "Each pipeline stage's own time per request in /metrics (portico_stage_duration_seconds{stage}); " +
        'its cost is a row of npm run bench.',
    }),
  },
  { additionalProperties: false, default: {}, description: 'Admin listener (port from ADMIN_PORT).' },
);
export type AdminConfig = Static<typeof AdminConfigSchema>;

/** One dependency the gateway needs to serve; identity and rate limiting add theirs. */
export interface ReadinessCheck {
  name: string;
  check: (timeoutMs: number) => Promise<{ ok: boolean; detail: string }>;
}

export interface AdminDeps {
  metrics: GatewayMetrics;
  /** What `/metrics` answers instead of this process's registry (the sum of all workers). */
  metricsText?: () => Promise<string>;
  /**
   * Answers the cache purge endpoint (POST /cache/purge?prefix=...) when it returns true; it
   * checks the admin token, Host, Origin and content type itself (admin/purge-guard.ts).
   */
  purge?: (req: IncomingMessage, res: ServerResponse) => boolean;
  checks: () => readonly ReadinessCheck[];
  draining: () => boolean;
  log: Logger;
}

export function createAdminServer(config: AdminConfig, deps: AdminDeps): Server {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    res.setHeader(NOSNIFF.name, NOSNIFF.value);
    const send = (status: number, body: unknown, type = 'application/json') => {
      res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (deps.purge?.(req, res) === true) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      send(405, { status: 'method not allowed' });
      return;
    }
    switch (path) {
      case '/healthz':
        send(200, { status: 'ok' });
        return;
      case '/readyz':
        void readiness(config, deps).then(({ ready, checks }) =>
          send(ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', checks }),
        );
        return;
      case '/metrics':
        void (deps.metricsText?.() ?? deps.metrics.registry.metrics()).then(
          (text) => send(200, text, deps.metrics.registry.contentType),
          (error: unknown) => {
            deps.log.error({ err: error }, 'metrics collection failed');
            send(500, { status: 'metrics collection failed' });
          },
        );
        return;
      default:
        send(404, { status: 'not found' });
    }
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  return server;
}

async function readiness(config: AdminConfig, deps: AdminDeps) {
  if (deps.draining()) return { ready: false, checks: [{ name: 'listener', ok: false, detail: 'draining' }] };
  const checks = await Promise.all(
    deps.checks().map(async ({ name, check }) => {
      try {
        return { name, ...(await check(config.readinessTimeoutMs)) };
      } catch (error) {
        return { name, ok: false, detail: (error as Error).message };
      }
    }),
  );
  return { ready: checks.every((c) => c.ok), checks };
}
