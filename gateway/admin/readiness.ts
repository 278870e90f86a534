/**
 * Readiness that means "can serve", for a fleet: a gateway is NotReady only for what another
 * gateway would do better, such as its own drain or identity keys it has not loaded. A
 * dependency the whole fleet shares (Redis, an upstream) failing makes every gateway fail at
 * once; NotReady would then take them all out of rotation together and turn the answers they
 * can still give (limits counted by `onStoreFailure`, 502/503 problems) into refused
 * connections. Such a check reports the failure as degraded instead: `/readyz` stays 200 with
 * `status: "degraded"`, and `/healthz`, `/metrics` and the dashboard say what is degraded.
 *
 * Each check says per run whether its failure is `required` (NotReady) or not (degraded): the
 * Redis check is required only under `onStoreFailure: deny`, which refuses rather than serve.
 */
import { Gauge, type Registry } from 'prom-client';

/** What one check found. */
export interface CheckOutcome {
  ok: boolean;
  detail: string;
  /** Whether a failure makes the gateway NotReady; true unless the check says otherwise. */
  required?: boolean;
}

/** One dependency the gateway needs to serve; identity and rate limiting add theirs. */
export interface ReadinessCheck {
  name: string;
  check: (timeoutMs: number) => Promise<CheckOutcome>;
}

export interface CheckReport {
  name: string;
  ok: boolean;
  detail: string;
  required: boolean;
}

export interface ReadinessReport {
  ready: boolean;
  /** Ready, with a check that is not required failing. */
  degraded: boolean;
  status: 'ready' | 'degraded' | 'not ready';
  checks: CheckReport[];
  /** Epoch milliseconds of the run. */
  at: number;
}

export interface Readiness {
  /** Runs every check now (bounded by the probe timeout each) and keeps the report. */
  run(): Promise<ReadinessReport>;
  /**
   * What `/healthz` adds, without waiting on any dependency (a liveness probe must not): the
   * degraded checks of the latest report, refreshed in the background when it is older than
   * REFRESH_MS.
   */
  latestDegradations(): { name: string; detail: string }[];
}

/** A report older than this is refreshed (in the background) when `/healthz` or `/metrics` asks. */
const REFRESH_MS = 5000;

export function createReadiness(deps: {
  checks: () => readonly ReadinessCheck[];
  draining: () => boolean;
  timeoutMs: number;
  registry: Registry;
}): Readiness {
  let latest: ReadinessReport | undefined;
  let running: Promise<ReadinessReport> | undefined;
  const gauges = readinessGauges(deps.registry, () => refreshIfStale());

  async function runChecks(): Promise<ReadinessReport> {
    const at = Date.now();
    if (deps.draining()) {
      const checks = [{ name: 'listener', ok: false, detail: 'draining', required: true }];
      return { ready: false, degraded: false, status: 'not ready', checks, at };
    }
    const checks = await Promise.all(
      deps.checks().map(async ({ name, check }): Promise<CheckReport> => {
        try {
          const outcome = await check(deps.timeoutMs);
          return { name, ok: outcome.ok, detail: outcome.detail, required: outcome.required ?? true };
        } catch (error) {
          return { name, ok: false, detail: (error as Error).message, required: true };
        }
      }),
    );
    const ready = checks.every((c) => c.ok || !c.required);
    const degraded = ready && checks.some((c) => !c.ok);
    return { ready, degraded, status: ready ? (degraded ? 'degraded' : 'ready') : 'not ready', checks, at };
  }

  function run(): Promise<ReadinessReport> {
    // Probes that arrive together share one run.
    running ??= runChecks()
      .then((report) => {
        latest = report;
        gauges.record(report);
        return report;
      })
      .finally(() => (running = undefined));
    return running;
  }

  function refreshIfStale(): void {
    if (latest === undefined || Date.now() - latest.at > REFRESH_MS) void run().catch(() => undefined);
  }

  return {
    run,
    latestDegradations() {
      refreshIfStale();
      return (latest?.checks ?? []).filter((c) => !c.ok).map(({ name, detail }) => ({ name, detail }));
    },
  };
}

/** `portico_ready`, `portico_degraded` and each check's `portico_readiness_check_ok`, from the latest run. */
function readinessGauges(registry: Registry, onScrape: () => void) {
  const ready = new Gauge({
    name: 'portico_ready',
    help: '1 when the latest readiness run found the gateway ready (degraded included), else 0.',
    registers: [registry],
    // Workers: the fleet's worst.
    aggregator: 'min',
    collect: onScrape,
  });
  const degraded = new Gauge({
    name: 'portico_degraded',
    help: '1 when the latest readiness run found a dependency failing that does not stop the gateway serving.',
    registers: [registry],
    aggregator: 'max',
  });
  const checkOk = new Gauge({
    name: 'portico_readiness_check_ok',
    help: '1 when the check passed in the latest readiness run; `required` says whether its failure is NotReady.',
    labelNames: ['check', 'required'],
    registers: [registry],
    aggregator: 'min',
  });
  return {
    record(report: ReadinessReport) {
      ready.set(report.ready ? 1 : 0);
      degraded.set(report.degraded ? 1 : 0);
      checkOk.reset();
      for (const check of report.checks)
        checkOk.set({ check: check.name, required: String(check.required) }, check.ok ? 1 : 0);
    },
  };
}
