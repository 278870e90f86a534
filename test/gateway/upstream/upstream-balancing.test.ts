/**
 * Several targets behind one route, each a real process: load shared by weight, a slow target
 * given less. The config of targets, validated by path: upstream-balancing-config.unit.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestGateway, type TestGateway } from '../support/harness.ts';
import { startReplica, type Replica } from '../support/replica-process.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function replica(options: Parameters<typeof startReplica>[0]): Promise<Replica> {
  const started = await startReplica(options);
  cleanups.push(() => started.kill());
  return started;
}

async function gatewayFor(
  upstreams: { url: string; weight?: number }[],
  extra: Record<string, unknown> = {},
) {
  const gw = await startTestGateway('http://unused.invalid', {
    routes: [{ prefix: '/v1', upstreams, auth: 'none' }],
    // Hundreds of requests from one client: the default limit would answer 429.
    rateLimits: { policies: [] },
    ...extra,
  });
  cleanups.push(() => gw.close());
  return gw;
}

async function getReplica(gw: TestGateway, path = '/v1/x'): Promise<string> {
  const response = await request(`${gw.origin}${path}`, { dispatcher: gw.agent });
  const body = (await response.body.json()) as { replica?: string };
  expect(response.statusCode).toBe(200);
  return body.replica ?? '';
}

describe('several targets per route', () => {
  it('shares requests by weight: 3 to 1 over 400 requests one after another', async () => {
    const a = await replica({ name: 'a' });
    const b = await replica({ name: 'b' });
    const gw = await gatewayFor([
      { url: a.url, weight: 3 },
      { url: b.url, weight: 1 },
    ]);
    const seen: Record<string, number> = {};
    for (let i = 0; i < 400; i++) {
      const name = await getReplica(gw);
      seen[name] = (seen[name] ?? 0) + 1;
    }
    // With nothing outstanding every pick is a tie, which smooth weighted round robin shares exactly.
    expect(seen).toEqual({ a: 300, b: 100 });
    expect(await a.counts()).toEqual({ GET: 300 });
  });

  it('sends less to a slow target: the fewest requests awaiting an answer wins', async () => {
    const fast = await replica({ name: 'fast', delayMs: 5 });
    const slow = await replica({ name: 'slow', delayMs: 200 });
    const gw = await gatewayFor([{ url: fast.url }, { url: slow.url }]);
    const seen: Record<string, number> = { fast: 0, slow: 0 };
    const until = Date.now() + 1500;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (Date.now() < until) {
          const name = await getReplica(gw);
          seen[name] = (seen[name] ?? 0) + 1;
        }
      }),
    );
    // Round robin would give each half; the slow one holds its requests 40 times as long.
    expect(seen['fast']).toBeGreaterThan(100);
    expect(seen['slow']!).toBeLessThan(seen['fast']! / 5);
  });

  it('after a burst the avoided slow target does not win the quiet picks that follow', async () => {
    const fast = await replica({ name: 'fast', delayMs: 5 });
    const slow = await replica({ name: 'slow', delayMs: 300 });
    const gw = await gatewayFor([{ url: fast.url }, { url: slow.url }]);
    // The burst: two clients at once. While one waits on the slow target, every pick of the
    // other is decided by outstanding requests (fast 0, slow 1) and goes to the fast one.
    const burst: Record<string, number> = { fast: 0, slow: 0 };
    const until = Date.now() + 1000;
    await Promise.all(
      Array.from({ length: 2 }, async () => {
        while (Date.now() < until) {
          const name = await getReplica(gw);
          burst[name] = (burst[name] ?? 0) + 1;
        }
      }),
    );
    expect(burst['fast']).toBeGreaterThan(20);
    // Then one client, one request at a time: nothing is outstanding at any pick, every pick
    // is a tie and round robin shares them. Credit earned by picks that outstanding requests
    // decided would hand every one of them to the slow target.
    const quiet: Record<string, number> = { fast: 0, slow: 0 };
    for (let i = 0; i < 10; i++) {
      const name = await getReplica(gw);
      quiet[name] = (quiet[name] ?? 0) + 1;
    }
    expect(quiet['fast']).toBeGreaterThanOrEqual(4);
    expect(quiet['slow']).toBeGreaterThanOrEqual(4);
  });
});
