/**
 * The admin listener, on 127.0.0.1 only: liveness, readiness, Prometheus metrics and the
 * operators' dashboard (`/`, refreshed from `/dashboard.json`), open to read; the cache purge,
 * which changes the gateway, needs the admin token (purge-guard.ts). It stays open during a
 * drain so that orchestrators see `/readyz` turn 503. Every error it answers is
 * application/problem+json, like the rest of the product.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from '../../shared/node-http.ts';
import type { Logger } from 'pino';
import { HttpProblem, sendProblem } from '../../shared/errors.ts';
import type { AdminConfig } from '../config/schema/admin.ts';
import { NOSNIFF } from '../edge/raw-refusal.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { sendAsset, type DashboardAssets } from './dashboard-assets.ts';
import type { Dashboard } from './dashboard.ts';
import { createReadiness, type ReadinessCheck } from './readiness.ts';

export type { ReadinessCheck } from './readiness.ts';

export interface AdminDeps {
  metrics: GatewayMetrics;
  /** What `/metrics` answers instead of this process's registry (the sum of all workers). */
  metricsText?: () => Promise<string>;
  /**
   * Answers the cache purge endpoint (POST /cache/purge?prefix=...) when it returns true; it
   * checks the admin token, Host, Origin and content type itself (admin/purge-guard.ts).
   */
  purge?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** Answers POST /config/reload when it returns true, guarded like the purge (config-reload.ts). */
  reload?: (req: IncomingMessage, res: ServerResponse) => boolean;
  checks: () => readonly ReadinessCheck[];
  draining: () => boolean;
  log: Logger;
  /**
   * Refuses a read that says more than "alive" (/readyz, /metrics, the dashboard) to a Host
   * naming another server: what a DNS-rebinding page sends (purge-guard.ts checkHost).
   */
  hostGuard?: (req: IncomingMessage) => HttpProblem | undefined;
  /** The operators' dashboard: its page and assets, and the snapshot it polls. */
  dashboard?: {
    assets: DashboardAssets;
    data: Dashboard;
  };
}

/** Answered to any Host: liveness probes name the gateway however they reach it. */
const OPEN_TO_ANY_HOST = new Set(['/healthz']);

const DASHBOARD_JSON = '/dashboard.json';

type Send = (status: number, body: unknown, type?: string) => void;
type Answer = (send: Send, req: IncomingMessage, res: ServerResponse) => void;

export function createAdminServer(config: AdminConfig, deps: AdminDeps): Server {
  const answers = endpoints(config, deps);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
    res.setHeader(NOSNIFF.name, NOSNIFF.value);
    const send: Send = (status, body, type = 'application/json') => {
      res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (deps.purge?.(req, res) === true || deps.reload?.(req, res) === true) return;
    const asset = deps.dashboard?.assets.get(path);
    const answer = answers[path];
    if (asset === undefined && answer === undefined) {
      sendProblem(res, new HttpProblem('ERR_ROUTE_NOT_FOUND', `Nothing is served at ${path}`), path);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      const allow = { headers: { Allow: 'GET, HEAD' } };
      sendProblem(
        res,
        new HttpProblem('ERR_METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}`, allow),
        path,
      );
      return;
    }
    const refused = OPEN_TO_ANY_HOST.has(path) ? undefined : deps.hostGuard?.(req);
    if (refused !== undefined) sendProblem(res, refused, path);
    else if (asset !== undefined) sendAsset(req, res, asset);
    else answer?.(send, req, res);
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  return server;
}

function endpoints(config: AdminConfig, deps: AdminDeps): Partial<Record<string, Answer>> {
  const failed = (res: ServerResponse, what: string) => (error: unknown) => {
    deps.log.error({ err: error }, `${what} failed`);
    sendProblem(res, new HttpProblem('ERR_INTERNAL', `${what} failed`));
  };
  const { dashboard } = deps;
  const readiness = createReadiness({
    checks: deps.checks,
    draining: deps.draining,
    timeoutMs: config.readinessTimeoutMs,
    registry: deps.metrics.registry,
  });
  return {
    // Liveness: always 200, answered without waiting on any dependency; the detail says what
    // the latest readiness run found degraded (readiness.ts).
    '/healthz': (send) => {
      const degraded = readiness.latestDegradations();
      send(200, degraded.length === 0 ? { status: 'ok' } : { status: 'degraded', degraded });
    },
    // A readiness report, not an error: 503 tells the orchestrator, the body tells the operator.
    '/readyz': (send, _req, res) =>
      void readiness
        .run()
        .then(
          ({ ready, status, checks }) => send(ready ? 200 : 503, { status, checks }),
          failed(res, 'readiness checks'),
        ),
    '/metrics': (send, _req, res) =>
      void (deps.metricsText?.() ?? deps.metrics.registry.metrics()).then(
        (text) => send(200, text, deps.metrics.registry.contentType),
        failed(res, 'metrics collection'),
      ),
    ...(dashboard === undefined
      ? {}
      : {
          [DASHBOARD_JSON]: (send, _req, res) =>
            void readiness
              .run()
              .then((report) =>
                dashboard.data.snapshot({
                  draining: deps.draining(),
                  report,
                  timeoutMs: config.readinessTimeoutMs,
                }),
              )
              .then((snapshot) => send(200, snapshot), failed(res, 'dashboard snapshot')),
        }),
  };
}
