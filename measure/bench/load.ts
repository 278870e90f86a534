/**
 * The load generator, run by measure/bench.ts as a child process so that its CPU never
 * counts against the process being measured:
 *
 *   node measure/bench/load.ts '{"url": "...", "connections": 32, "duration": 6, "headers": {...}}'
 *
 * Drives autocannon for a bounded duration and prints one JSON line (LoadResult).
 *
 * Latencies are taken from autocannon's per-response event (hrtime, fractional ms) rather
 * than its histogram, which buckets at whole milliseconds: too coarse for sub-ms answers.
 *
 * TLS: autocannon 9 passes `rejectUnauthorized: false` to tls.connect after the caller's
 * options (lib/httpClient.js), so a `ca` given here would be ignored. The bench therefore
 * checks the certificate itself, with the CA and hostname verified, right before each row
 * (see `verifyEndpoint` in measure/bench.ts). The handshake and encryption the server does are
 * the same whether or not the client checks the chain.
 */
import { createRequire } from 'node:module';
import { proofMaker, type DpopLoad } from './dpop-proofs.ts';

export interface LoadOptions {
  url: string;
  connections: number;
  duration: number;
  headers: Record<string, string>;
  /** A new DPoP proof in each request, made here as the request is built (dpop-proofs.ts). */
  dpop?: DpopLoad;
}

export interface LoadResult {
  responses: number;
  seconds: number;
  p50: number;
  p99: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
}

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}
interface AutocannonInstance {
  on(
    event: 'response',
    listener: (client: unknown, statusCode: number, bytes: number, responseTimeMs: number) => void,
  ): void;
}
type Autocannon = (
  options: Record<string, unknown>,
  done: (error: Error | null, result: AutocannonResult) => void,
) => AutocannonInstance;

// autocannon ships no types, and a devDependency on @types for one call is not worth it.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

/**
 * autocannon's requests for a DPoP row: one request whose `setupRequest` runs before every
 * send, so that each carries a proof never sent before.
 */
function dpopRequests(dpop: DpopLoad | undefined): Record<string, unknown> {
  if (dpop === undefined) return {};
  const proof = proofMaker(dpop);
  type Built = { headers: Record<string, string> };
  return {
    requests: [
      { setupRequest: (request: Built) => ({ ...request, headers: { ...request.headers, dpop: proof() } }) },
    ],
  };
}

function run(options: LoadOptions): Promise<LoadResult> {
  const times: number[] = [];
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        duration: options.duration,
        headers: options.headers,
        timeout: 10,
        ...dpopRequests(options.dpop),
      },
      (error, result) => {
        if (error !== null) return reject(error);
        const sorted = Float64Array.from(times).sort();
        const statuses: Record<string, number> = {};
        for (const [code, { count }] of Object.entries(result.statusCodeStats)) statuses[code] = count;
        resolve({
          responses: times.length,
          seconds: result.duration,
          p50: percentile(sorted, 0.5),
          p99: percentile(sorted, 0.99),
          statuses,
          errors: result.errors,
          timeouts: result.timeouts,
        });
      },
    );
    instance.on('response', (_client, _status, _bytes, responseTimeMs) => times.push(responseTimeMs));
  });
}

// An entry point only: measure/bench.ts imports nothing but types from here.
const options = JSON.parse(process.argv[2] ?? '{}') as LoadOptions;
process.stdout.write(`${JSON.stringify(await run(options))}\n`);
