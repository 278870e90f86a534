/**
 * Targets dying and coming back under load, each a real process: idempotent requests retried
 * on the other target, POSTs answered 502 once and never repeated, the dead target taken out
 * and brought back by the health check, /readyz when no target is left, and each retry in the
 * audit record and the metrics.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { verifyAuditFile } from '../../../gateway/audit/verify-chain.ts';
import { sleep, startTestGateway, type TestGateway } from '../support/harness.ts';
import { startReplica, type Replica, type ReplicaOptions } from '../support/replica-process.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function replica(options: ReplicaOptions): Promise<Replica> {
  const started = await startReplica(options);
  cleanups.push(() => started.kill());
  return started;
}

// Two failures in a row, so that one check slowed by a busy machine does not take a live target out.
const FAST_CHECK = { path: '/healthz', intervalMs: 250, timeoutMs: 200, healthyAfter: 1, unhealthyAfter: 2 };

async function gatewayFor(route: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'portico-failover-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const auditLogPath = join(dir, 'audit.log');
  const gw = await startTestGateway(
    'http://unused.invalid',
    { routes: [{ prefix: '/v1', auth: 'none', ...route }], rateLimits: { policies: [] }, ...extra },
    { auditLogPath },
  );
  cleanups.push(() => gw.close());
  return { gw, audit: () => readAudit(auditLogPath), auditFile: auditLogPath };
}

function readAudit(path: string): Record<string, unknown>[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function send(
  gw: TestGateway,
  method = 'GET',
): Promise<{ status: number; body: string; retryAfter?: string }> {
  const response = await request(`${gw.origin}/v1/x`, {
    dispatcher: gw.agent,
    method,
    ...(method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : {}),
  });
  const retryAfter = response.headers['retry-after'];
  return {
    status: response.statusCode,
    body: await response.body.text(),
    ...(typeof retryAfter === 'string' ? { retryAfter } : {}),
  };
}

async function metricsOf(gw: TestGateway): Promise<string> {
  return gw.gateway.metrics.registry.metrics();
}

describe('a target dies under load', () => {
  it('answers every GET (retried on the other target), takes the dead one out, and brings it back within the check interval', async () => {
    const a = await replica({ name: 'a' });
    const b = await replica({ name: 'b' });
    const { gw, audit } = await gatewayFor(
      { upstreams: [{ url: a.url }, { url: b.url }], healthCheck: FAST_CHECK },
      // All four clients may fail over at the same moment; the default floor of 3 retries in
      // flight would answer the fourth 502, which is the budget working (upstream-retries.test.ts).
      // Two failures in a row eject: the passive ejection must come before the health check's
      // verdict (two checks, ~500 ms), and the dead target gets only its share of the picks
      // that tie (balancer.ts), a few per 100 ms on a loaded machine.
      { proxy: { retryBudget: { minRetryConcurrency: 4 }, outlierDetection: { consecutiveFailures: 2 } } },
    );

    const statuses: number[] = [];
    let stop = false;
    const load = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!stop) statuses.push((await send(gw)).status);
      }),
    );
    while (statuses.length < 20) await sleep(10);
    await a.kill();
    const killedAt = statuses.length;
    await sleep(1000);
    const servedByBWhileDown = (await b.counts())['GET'] ?? 0;

    const back = await startReplica({ name: 'a', port: a.port });
    cleanups.push(() => back.kill());
    const restartedAt = Date.now();
    let returnedAfterMs = -1;
    while (Date.now() - restartedAt < 3000) {
      if (((await back.counts())['GET'] ?? 0) > 0) {
        returnedAfterMs = Date.now() - restartedAt;
        break;
      }
      await sleep(20);
    }
    stop = true;
    await load;

    expect(killedAt).toBeGreaterThanOrEqual(20);
    expect(servedByBWhileDown).toBeGreaterThan(20);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    // One interval to be checked, plus the time to restart; far less than the ejection (10 s).
    expect(returnedAfterMs).toBeGreaterThanOrEqual(0);
    expect(returnedAfterMs).toBeLessThan(2 * FAST_CHECK.intervalMs + 500);

    const retried = audit().filter((record) => Array.isArray(record['retries']));
    expect(retried.length).toBeGreaterThan(0);
    expect(retried[0]).toMatchObject({ status: 200, retries: [{ target: a.url }] });
    const metrics = await metricsOf(gw);
    expect(metrics).toMatch(/portico_upstream_retries_total\{route="\/v1",reason="(refused|reset)"\} [1-9]/);
    expect(metrics).toContain(
      `portico_upstream_health_checks_total{route="/v1",upstream="${a.url}",result="fail"}`,
    );
    expect(
      gw.logs.some((line) => line['msg'] === 'upstream target unhealthy' && line['upstream'] === a.url),
    ).toBe(true);
    expect(
      gw.logs.some((line) => line['msg'] === 'upstream target healthy' && line['upstream'] === a.url),
    ).toBe(true);
    // Ejected for 10 s by its failures, it came back within a second: the passing check readmitted it.
    expect(
      gw.logs.some((line) => line['msg'] === 'upstream target ejected' && line['upstream'] === a.url),
    ).toBe(true);
  });

  it('answers a POST to the dead target 502 once and never sends it again; GETs go through', async () => {
    const a = await replica({ name: 'a' });
    const b = await replica({ name: 'b' });
    const { gw, audit, auditFile } = await gatewayFor({ upstreams: [{ url: a.url }, { url: b.url }] });
    await a.kill();

    const posts = [];
    for (let i = 0; i < 4; i++) posts.push((await send(gw, 'POST')).status);
    const gets = [];
    for (let i = 0; i < 4; i++) gets.push((await send(gw, 'GET')).status);

    // Equal weights alternate: two POSTs went to the dead target.
    expect(posts.filter((status) => status === 502)).toHaveLength(2);
    expect(posts.filter((status) => status === 200)).toHaveLength(2);
    expect((await b.counts())['POST']).toBe(2);
    expect(gets).toEqual([200, 200, 200, 200]);
    // A record is written once its response has closed, just after the client read it.
    for (let i = 0; i < 100 && audit().length < 8; i++) await sleep(10);
    const records = audit();
    expect(records).toHaveLength(8);
    expect(records.filter((r) => r['method'] === 'POST' && r['retries'] !== undefined)).toEqual([]);
    expect(records.filter((r) => r['method'] === 'GET' && r['retries'] !== undefined).length).toBeGreaterThan(
      0,
    );
    // The retries are part of the sealed records: the hash chain still verifies.
    expect(await verifyAuditFile(auditFile)).toMatchObject({ ok: true, records: records.length });
  });

  it('ejects a target after consecutive failures, never more than the configured share', async () => {
    const a = await replica({ name: 'a', mode: 'reset' });
    const b = await replica({ name: 'b', mode: 'reset' });
    const { gw } = await gatewayFor(
      { upstreams: [{ url: a.url }, { url: b.url }] },
      { proxy: { retries: 0, outlierDetection: { consecutiveFailures: 3, baseEjectionMs: 60_000 } } },
    );
    for (let i = 0; i < 12; i++) expect((await send(gw)).status).toBe(502);
    const metrics = await metricsOf(gw);
    const ejections = [...metrics.matchAll(/portico_upstream_ejections_total\{[^}]*\} (\d+)/g)].map((m) =>
      Number(m[1]),
    );
    // Both fail every request, but with two targets at 50 % only one may be out.
    expect(ejections).toEqual([1]);
    expect(metrics).toMatch(/portico_upstream_target_in_rotation\{route="\/v1",upstream="[^"]+"\} 0/);
    expect(metrics).toMatch(/portico_upstream_target_in_rotation\{route="\/v1",upstream="[^"]+"\} 1/);
    expect(gw.logs.filter((line) => line['msg'] === 'upstream target ejected')).toHaveLength(1);
  });
  it('ejects for a growing interval, bounded by maxEjectionMs, and returns the target each time', async () => {
    const bad = await replica({ name: 'bad', mode: 'reset' });
    const good = await replica({ name: 'good' });
    const { gw } = await gatewayFor(
      { upstreams: [{ url: bad.url }, { url: good.url }] },
      { proxy: { outlierDetection: { consecutiveFailures: 1, baseEjectionMs: 200, maxEjectionMs: 500 } } },
    );
    const ejections = () => gw.logs.filter((line) => line['msg'] === 'upstream target ejected');
    const statuses = new Set<number>();
    const until = Date.now() + 5000;
    while (ejections().length < 3 && Date.now() < until) statuses.add((await send(gw)).status);

    // Back after each ejection, failing at once again: 200 ms, then twice that, then the cap.
    expect(ejections().map((line) => [line['upstream'], line['forMs']])).toEqual([
      [bad.url, 200],
      [bad.url, 400],
      [bad.url, 500],
    ]);
    expect(gw.logs.filter((line) => line['msg'] === 'upstream target back in rotation')).toHaveLength(2);
    // The requests that met the bad target were retried on the good one.
    expect([...statuses]).toEqual([200]);
  });
});

describe('/readyz', () => {
  it('without a health check, probes every target of a route and is ready while one accepts', async () => {
    const a = await replica({ name: 'a' });
    const b = await replica({ name: 'b' });
    const { gw } = await gatewayFor({ upstreams: [{ url: a.url }, { url: b.url }] });
    await a.kill();
    const response = await request(`${gw.adminOrigin}/readyz`);
    expect(response.statusCode).toBe(200);
    expect(((await response.body.json()) as { checks: unknown[] }).checks).toContainEqual({
      name: 'route /v1',
      ok: true,
      required: false,
      detail: `1 of 2 targets reachable; ${a.url} ECONNREFUSED`,
    });
  });

  // With none healthy the gateway still answers (503 problems), so it stays ready, degraded:
  // the targets are shared by the whole fleet (issue 29, admin/readiness.ts).
  it('stays ready while one target of a route is healthy, and degraded when none is (503 for requests)', async () => {
    const a = await replica({ name: 'a' });
    const b = await replica({ name: 'b' });
    const { gw } = await gatewayFor({ upstreams: [{ url: a.url }, { url: b.url }], healthCheck: FAST_CHECK });
    const readyz = async () => {
      const response = await request(`${gw.adminOrigin}/readyz`);
      return { status: response.statusCode, body: (await response.body.json()) as { checks: unknown[] } };
    };
    expect((await readyz()).status).toBe(200);

    await a.kill();
    await sleep(FAST_CHECK.intervalMs * 4);
    const one = await readyz();
    expect(one.status).toBe(200);
    expect(one.body.checks).toContainEqual(expect.objectContaining({ name: 'route /v1', ok: true }));

    await b.kill();
    await sleep(FAST_CHECK.intervalMs * 4);
    const none = await readyz();
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({ status: 'degraded' });
    expect(none.body.checks).toContainEqual(
      expect.objectContaining({
        name: 'route /v1',
        ok: false,
        required: false,
        detail: expect.stringMatching(/^0 of 2 targets healthy/),
      }),
    );
    const answer = await send(gw);
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'ERR_NO_HEALTHY_UPSTREAM' });
    expect(answer.retryAfter).toBe('1');
  });
});
