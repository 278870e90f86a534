/**
 * The admission bound of docs/scaling.md, and what gateway processes say about their store,
 * for the tests that hold admissions to it under faults.
 */
import type { GatewayProcess } from '../../gateway/support/gateway-process.ts';
import type { ScaleFixture } from './scale-fixture.ts';

/**
 * At most the limit (counted in Redis) plus one share per gateway (counted alone while Redis
 * fails): limit + gateways × max(1, ⌊limit ÷ gateways⌋).
 */
export function admissionBound(limit: number, gateways: number): number {
  return limit + gateways * Math.max(1, Math.floor(limit / gateways));
}

/** A gauge of a gateway's /metrics, 0 when absent. */
async function gauge(gateway: GatewayProcess, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

/** Rate-limit store commands that failed, summed over the gateways. */
export async function storeFailures(gateways: readonly GatewayProcess[]): Promise<number> {
  const each = await Promise.all(gateways.map((g) => gauge(g, 'portico_ratelimit_store_failures')));
  return each.reduce((a, b) => a + b, 0);
}

/**
 * `count` requests of one credential, `concurrency` at a time, taking turns over the gateways;
 * statuses in order sent. A steady flow over warm connections, as a fleet sees it, rather
 * than one burst of TLS handshakes (which on a busy test machine stalls a gateway's event
 * loop longer than any store timeout, and measures the machine, not the store).
 */
export async function steadyLoad(
  fixture: ScaleFixture,
  gateways: readonly GatewayProcess[],
  authorization: string,
  count: number,
  concurrency = 8,
): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const n = next++;
      statuses[n] = (await fixture.call(gateways[n % gateways.length]!.port, authorization)).status;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return statuses;
}
