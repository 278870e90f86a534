/**
 * The admin listener of one gateway: `/metrics`, `/healthz`, `/readyz`, the dashboard, the
 * cache purge and the config reload, on 127.0.0.1 unless told otherwise. Everything it reads
 * of the pipeline is read through `built` at each request, because a reload swaps the
 * pipeline those getters describe.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Lifecycle } from '../shared/lifecycle.ts';
import { handlePurge } from './admin/cache-purge.ts';
import { handleConfigReload } from './admin/config-reload.ts';
import { createDashboard } from './admin/dashboard.ts';
import { loadDashboardAssets } from './admin/dashboard-assets.ts';
import { checkHost, createAdminGuard, loadAdminToken } from './admin/purge-guard.ts';
import { createAdminServer } from './admin/server.ts';
import { upstreamHealth } from './admin/upstream-health.ts';
import type { BuiltGateway } from './build.ts';
import type { ReloadAnswer } from './config/reload-summary.ts';
import type { GatewayConfig } from './config/schema/gateway.ts';
import { closeServer, listen } from './listen.ts';
import type { ConfigStateSource } from './observability/config-metrics.ts';

export interface AdminDeps {
  log: Logger;
  /** Admin port, always bound to `adminHost` (127.0.0.1 unless a test says otherwise). */
  adminPort: number;
  adminHost?: string;
  /**
   * Bearer token of the admin purge; by default PORTICO_ADMIN_TOKEN, else `admin-token` in
   * the data dir. Without any, the purge refuses every request.
   */
  adminToken?: string;
  /**
   * What `POST /config/reload` runs: the config file's reload (of every worker under
   * GATEWAY_WORKERS), or undefined without a file (run.ts).
   */
  reloadConfig?: () => Promise<ReloadAnswer> | undefined;
  /** The dashboard chart's sampling interval (admin/traffic-history.ts; 10 s): tests shorten it. */
  dashboardHistoryMs?: number;
  /** The config version running and the last reload (each worker's), for the dashboard (run.ts). */
  configState?: ConfigStateSource;
  /** What the admin `/metrics` answers instead of this process's own (GATEWAY_WORKERS: all workers). */
  metricsText?: () => Promise<string>;
  env?: NodeJS.ProcessEnv;
  dataDir?: string;
}

/** Opens the admin listener; its close and the dashboard's sampling go on `lifecycle`. */
export async function startAdminListener(
  config: GatewayConfig,
  deps: AdminDeps,
  built: BuiltGateway,
  lifecycle: Lifecycle,
  draining: () => boolean,
): Promise<AddressInfo> {
  const { log } = deps;
  const adminHost = deps.adminHost ?? '127.0.0.1';
  const adminToken = deps.adminToken ?? loadAdminToken(deps.env ?? process.env, deps.dataDir);
  if (adminToken === undefined) log.warn('no admin token (PORTICO_ADMIN_TOKEN): the cache purge is refused');
  const adminGuard = createAdminGuard(adminToken, adminHost, config.admin.allowedHosts);
  const dashboard = createDashboard({
    // Read at each snapshot: a reload swaps the pipeline they describe.
    get routes() {
      return built.config.routes;
    },
    get stageNames() {
      return built.stageNames;
    },
    metrics: built.metrics,
    limiter: built.limiter,
    cache: built.cache,
    upstreamHealth: (timeoutMs) => upstreamHealth(built.upstreams, built.config.routes)(timeoutMs),
    configState: () => deps.configState?.(),
    get rateLimitPolicies() {
      return built.config.rateLimits.policies;
    },
    apiKeys: () => built.authenticator?.apiKeyRecords?.(),
    ...(deps.dashboardHistoryMs === undefined ? {} : { historyIntervalMs: deps.dashboardHistoryMs }),
  });
  lifecycle.defer('dashboard history', () => dashboard.close());
  const admin = createAdminServer(config.admin, {
    metrics: built.metrics,
    ...(deps.metricsText === undefined ? {} : { metricsText: deps.metricsText }),
    purge: (req, res) => handlePurge(built.cache, req, res, adminGuard),
    reload: (req, res) => handleConfigReload(req, res, adminGuard, () => deps.reloadConfig?.()),
    log,
    draining,
    checks: () => built.readinessChecks(),
    // Named from this file, which sits in the gateway's directory in the sources, in the
    // compiled output and in the build's one-file gateway alike (scripts/build-gateway-bundle.ts:
    // inside it every module's import.meta.url is the bundle's, dist/gateway/main.js).
    dashboard: { assets: loadDashboardAssets(new URL('admin/dashboard/', import.meta.url)), data: dashboard },
    hostGuard: (req) => checkHost(req, adminHost, config.admin.allowedHosts),
  });
  const address = await listen(admin, deps.adminPort, adminHost, 'ADMIN_PORT');
  lifecycle.defer('admin listener', () => closeServer(admin));
  return address;
}
