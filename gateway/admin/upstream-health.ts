/**
 * Each upstream's own `/healthz`, for the dashboard (readiness only needs a connection: a
 * service whose database is down still answers, and the gateway still serves its cache). The
 * resource service's `/healthz` runs a query, so its answer is PostgreSQL's health.
 */
import type { Upstreams } from '../upstream/pools.ts';
import type { CheckResult } from './dashboard.ts';

export function upstreamHealth(upstreams: Upstreams): (timeoutMs: number) => Promise<CheckResult[]> {
  return (timeoutMs) =>
    Promise.all(
      upstreams.origins.map(async (origin) => {
        const name = `${origin}/healthz`;
        try {
          const { statusCode, body } = await upstreams.pool(origin).request({
            path: '/healthz',
            method: 'GET',
            headersTimeout: timeoutMs,
            bodyTimeout: timeoutMs,
            signal: AbortSignal.timeout(timeoutMs),
          });
          await body.dump();
          return { name, ok: statusCode === 200, detail: `HTTP ${statusCode}` };
        } catch (error) {
          return { name, ok: false, detail: (error as Error).message };
        }
      }),
    );
}
