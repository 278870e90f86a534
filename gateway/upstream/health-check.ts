/**
 * Active health checks of one route's targets: every `intervalMs`, a GET of `path` on each
 * target over a connection of its own (pools.ts), so a dead or sick replica is taken out
 * before users hit it, and brought back once it answers again. A check still running when the
 * next is due is not doubled.
 */
import type { Logger } from 'pino';
import type { Pool } from 'undici';
import type { OutlierEjection } from './outlier-ejection.ts';
import type { Upstreams } from './pools.ts';
import type { HealthCheck } from '../config/schema/routes.ts';
import type { ResilienceMetrics } from './resilience-metrics.ts';
import { refreshMember, type Member, type UpstreamSet } from './upstream-set.ts';

interface Checked {
  member: Member;
  pool: Pool;
  running: boolean;
  /** Passes (positive) or failures (negative) in a row. */
  streak: number;
}

export interface HealthChecks {
  /** Runs one round now and waits for it (tests, and the first round at start). */
  runOnce(): Promise<void>;
  close(): void;
}

export function startHealthChecks(
  set: UpstreamSet,
  check: HealthCheck,
  deps: { upstreams: Upstreams; log: Logger; metrics: ResilienceMetrics; outlier: OutlierEjection },
): HealthChecks {
  const checked: Checked[] = set.members.map((member) => ({
    member,
    pool: deps.upstreams.checkPool(member.url),
    running: false,
    streak: 0,
  }));

  const judge = (entry: Checked, ok: boolean) => {
    const { member } = entry;
    deps.metrics.healthCheck(set.route, member.url, ok);
    entry.streak = ok ? Math.max(entry.streak, 0) + 1 : Math.min(entry.streak, 0) - 1;
    if (ok) deps.outlier.checkPassed(set, member);
    if (ok && !member.healthy && entry.streak >= check.healthyAfter) {
      member.healthy = true;
      deps.log.info({ route: set.route, upstream: member.url }, 'upstream target healthy');
    } else if (!ok && member.healthy && -entry.streak >= check.unhealthyAfter) {
      member.healthy = false;
      deps.log.warn({ route: set.route, upstream: member.url }, 'upstream target unhealthy');
    }
    refreshMember(member);
  };

  const probe = async (entry: Checked) => {
    if (entry.running) return;
    entry.running = true;
    let ok: boolean;
    try {
      const response = await entry.pool.request({
        path: check.path,
        method: 'GET',
        headers: { 'user-agent': 'portico-health-check' },
        headersTimeout: check.timeoutMs,
        bodyTimeout: check.timeoutMs,
        signal: AbortSignal.timeout(check.timeoutMs),
      });
      await response.body.dump();
      ok = response.statusCode >= 200 && response.statusCode < 300;
    } catch {
      ok = false;
    } finally {
      entry.running = false;
    }
    judge(entry, ok);
  };

  const runOnce = async () => {
    await Promise.all(checked.map(probe));
  };
  const timer = setInterval(() => void runOnce(), check.intervalMs);
  timer.unref();
  void runOnce();
  return {
    runOnce,
    close: () => clearInterval(timer),
  };
}
