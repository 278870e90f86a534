/**
 * The admission bound of docs/scaling.md, and what gateway processes say about their store,
 * for the tests that hold admissions to it under faults.
 */
import { expect } from 'vitest';
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

export interface CallerOutcome {
  statuses: number[];
  /** Requests that got no HTTP answer. */
  errors: number;
}

/**
 * Statuses of one caller's requests (pushed to `statuses` as they come), taking turns over the
 * gateways, until `running()` is false.
 */
export async function callerLoad(
  fixture: ScaleFixture,
  gateways: readonly GatewayProcess[],
  authorization: string,
  running: () => boolean,
  statuses: number[] = [],
  workers = 3,
): Promise<CallerOutcome> {
  let errors = 0;
  let sent = 0;
  const worker = async () => {
    while (running()) {
      const gateway = gateways[sent++ % gateways.length]!;
      try {
        statuses.push(
          (await fixture.call(gateway.port, authorization, '/v1/orders', 'GET', { timeoutMs: 5000 })).status,
        );
      } catch {
        errors++;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return { statuses, errors };
}

/** Polls `condition` every 100 ms (a rejection counts as false); false after `timeoutMs`. */
export async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition().catch(() => false)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/**
 * Whether every gateway itself counts `size` gateways in its fleet (its dashboard's
 * `rateLimit.fleetSize`), within `timeoutMs`. The bound "limit + one share each" holds once each
 * gateway counts the whole fleet: a join is announced to the others at once (fleet-share.ts),
 * but a gateway whose subscription was not live then learns it only at its next heartbeat.
 */
export function everyGatewayKnowsFleet(
  gateways: readonly GatewayProcess[],
  size: number,
  timeoutMs: number,
): Promise<boolean> {
  return until(async () => {
    const sizes = await Promise.all(
      gateways.map(async (gateway) => {
        const response = await fetch(`http://127.0.0.1:${gateway.adminPort}/dashboard.json`);
        const { rateLimit } = (await response.json()) as { rateLimit: { fleetSize: number } };
        return rateLimit.fleetSize;
      }),
    );
    return sizes.every((known) => known === size);
  }, timeoutMs);
}

/**
 * Prints what a master kill admitted to the caller at its limit before it and to the caller
 * whose traffic started after it, and holds both to the bound. Each must have been refused at
 * least once: the limit was reached, so the bound was tested.
 */
export function holdsTheBound(
  fault: string,
  limit: number,
  gateways: number,
  callers: { before: CallerOutcome; after: CallerOutcome },
): void {
  const bound = admissionBound(limit, gateways);
  const admitted = (statuses: number[]) => statuses.filter((s) => s === 200).length;
  const { before, after } = callers;
  console.log(
    `${fault}: limit ${limit}, bound ${bound}; caller at its limit before: admitted ${admitted(before.statuses)} of ${before.statuses.length}; ` +
      `caller starting after the kill: admitted ${admitted(after.statuses)} of ${after.statuses.length}; errors ${before.errors + after.errors}`,
  );
  for (const { statuses } of [before, after]) {
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(admitted(statuses)).toBeLessThanOrEqual(bound);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
  }
}
