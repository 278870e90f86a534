/**
 * Which rows a run measures (BENCH_ROWS), and the names of the rows each of the bench's own
 * gateways answers. The gateways start before their rows are built (rows.ts needs them
 * running), so the names are here, where both sides read them: a gateway whose rows are all
 * left out gets no profiling flags. Each idle gateway under `--cpu-prof` still costs about 7%
 * of a CPU in its sampler, and the twenty of a whole bench took a core between them: a profiled
 * hit row answered 89 requests a second where it answers thousands, and its profile showed
 * that starved state.
 */

/** The main gateway's rows (on the resource service). */
export const MAIN_GATEWAY_ROWS = {
  miss: 'gateway, cache miss',
  hit: 'gateway, cache hit',
  h2Hit: 'gateway, HTTP/2 cache hit',
  notModified: 'gateway, 304 at edge',
} as const;

export const REPLICAS_ROW = 'gateway, 2 replicas (miss)';

/** A main-gateway row run through the BENCH_BASELINE checkout's gateway. */
export function baselineRowName(row: string): string {
  return row.replace('gateway', 'baseline build');
}

/** The rows the baseline gateway answers: the miss and the hit. */
export const BASELINE_ROWS = [MAIN_GATEWAY_ROWS.miss, MAIN_GATEWAY_ROWS.hit].map(baselineRowName);

/** The shipped gateway with GATEWAY_WORKERS=`count` on the static upstream. */
export function workersRowName(count: number): string {
  return `gateway, ${count} worker${count === 1 ? '' : 's'} (static upstream)`;
}

/**
 * Whether the row named `name` runs: BENCH_ROWS holds comma-separated parts of row names, and
 * a row runs when its name contains one of them; unset or empty, every row runs.
 */
export function rowChosen(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const parts = (env['BENCH_ROWS'] ?? '').split(',').filter((part) => part !== '');
  return parts.length === 0 || parts.some((part) => name.includes(part));
}
