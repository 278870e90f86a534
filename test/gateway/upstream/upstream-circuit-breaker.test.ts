/**
 * The circuit breaker against a real, slow upstream process: past the connections and the
 * pending cap of its one target, a route answers an immediate 503 problem with Retry-After,
 * and what waits in the pool never grows past the cap.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { request } from 'undici';
import { buildGateway } from '../../../gateway/build.ts';
import { parseConfig } from '../../../gateway/config/load.ts';
import { startReplica } from '../support/replica-process.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('circuit breaking', () => {
  it('answers fast 503s with Retry-After past connections + maxPendingRequests, with a bounded queue', async () => {
    const slow = await startReplica({ name: 'slow', delayMs: 600 });
    cleanups.push(() => slow.kill());
    const { config } = parseConfig({
      routes: [{ prefix: '/v1', upstream: slow.url, auth: 'none' }],
      rateLimits: { policies: [] },
      proxy: { connectionsPerUpstream: 2, circuitBreaker: { maxPendingRequests: 3, retryAfterSeconds: 2 } },
    });
    // The built gateway on a plain socket: the test reads the upstream pool's queue directly.
    const gateway = await buildGateway(config, { log: pino({ level: 'silent' }) });
    const server: Server = createServer(gateway.handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      await new Promise((resolve) => server.close(resolve));
      await gateway.close();
    });
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const pool = gateway.upstreams.pool(slow.url);
    let mostQueued = 0;
    const sampler = setInterval(() => (mostQueued = Math.max(mostQueued, pool.stats.pending)), 5);
    cleanups.push(() => clearInterval(sampler));

    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const response = await request(`${origin}/v1/x`);
        const body = await response.body.text();
        return {
          status: response.statusCode,
          ms: Date.now() - started,
          retryAfter: response.headers['retry-after'],
          type: response.headers['content-type'],
          body,
        };
      }),
    );
    clearInterval(sampler);

    const served = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status === 503);
    expect(served).toHaveLength(5);
    expect(refused).toHaveLength(35);
    // The first answer the slow upstream gave (600 ms after its request at the earliest).
    const firstServedMs = Math.min(...served.map((answer) => answer.ms));
    expect(firstServedMs).toBeGreaterThanOrEqual(600);
    for (const answer of refused) {
      expect(answer.type).toBe('application/problem+json');
      expect(answer.retryAfter).toBe('2');
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'ERR_UPSTREAM_OVERLOADED', status: 503 });
      // Answered at once, not after waiting for the slow upstream: before it answered anyone.
      // (A fixed 400 ms failed on a loaded machine, where 40 requests take that long to send.)
      expect(answer.ms).toBeLessThan(firstServedMs);
    }
    // Two on the connections, three waiting; the upstream never saw more than it could take.
    expect(mostQueued).toBe(3);
    expect(await slow.counts()).toEqual({ GET: 5 });
    const metrics = await gateway.metrics.registry.metrics();
    expect(metrics).toContain(
      'portico_upstream_unavailable_total{route="/v1",code="ERR_UPSTREAM_OVERLOADED"} 35',
    );

    // Once the slow answers are in, the route takes requests again.
    const after = await request(`${origin}/v1/x`);
    expect(after.statusCode).toBe(200);
    await after.body.text();
  });
});
