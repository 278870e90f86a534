/**
 * GATEWAY_WORKERS=2 and a reload: `POST /config/reload` and `npm run -s reload` reach every
 * worker (through the primary), whichever worker takes the admin connection, and the answer
 * says what each did. A route added to the file is then served by both workers; a refused file
 * keeps both running on what they ran; a worker that does not answer is reported, not waited
 * for. `/metrics` aggregates the config metrics as gauges, not as a sum; the dashboard shows
 * each worker's version and last reload, whichever worker answers.
 *
 * Which worker answered a request is read from the audit log: each worker appends a chain of
 * its own, named by its slot (audit-workers.test.ts), with the request's path and status.
 *
 * The config file is edited where no watcher looks: in place, through a hard link to it in a
 * third folder. The workers watch the folders of the config's path and of the file a link there
 * points to; a write through another name of the same file reaches neither, so only the reload
 * itself can bring a worker the new routes. Otherwise a worker the reload missed would catch up
 * by its watcher and hide the gap.
 */
import { randomUUID } from 'node:crypto';
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayProcess } from '../gateway/support/gateway-process.ts';
import { runCommand } from '../support/run-command.ts';
import { onNewConnections, workerPids } from './support/gateway-workers.ts';
import { freshCustomer, startScaleFixture, type ScaleFixture } from './support/scale-fixture.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const TOKEN = 'workers-reload-admin-token-0123456789abcdef';
const NO_LIMITS = { policies: [] };
/** Requests per check, each on a new connection: the listener's round robin reaches both. */
const SPREAD = 30;

let fixture: ScaleFixture;
let dir: string;
let configFile: string;
/** Another name of configFile, in a folder no worker watches: every edit is written through it. */
let editedFile: string;
let auditLog: string;
let gateway: GatewayProcess;
let authorization: string;

const version = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

/** The fixture's config with its `/v1` route and one more route to the same upstream per prefix. */
function configWith(prefixes: string[], extra: Record<string, unknown> = {}): string {
  const base = fixture.config(NO_LIMITS);
  const v1 = (base['routes'] as Record<string, unknown>[])[0]!;
  const routes = [v1, ...prefixes.map((prefix) => ({ prefix, upstream: v1['upstream'] }))];
  const text = JSON.stringify({ ...base, routes, ...extra });
  writeFileSync(editedFile, text);
  return text;
}

beforeAll(async () => {
  fixture = await startScaleFixture();
  dir = mkdtempSync(join(tmpdir(), 'portico-workers-reload-'));
  mkdirSync(join(dir, 'release'));
  mkdirSync(join(dir, 'current'));
  configFile = join(dir, 'release', 'gateway.json');
  auditLog = join(dir, 'audit.log');
  mkdirSync(join(dir, 'edits'));
  editedFile = join(dir, 'edits', 'gateway.json');
  writeFileSync(configFile, '');
  linkSync(configFile, editedFile);
  configWith([]);
  const link = join(dir, 'current', 'gateway.json');
  symlinkSync(configFile, link);
  gateway = await fixture.gateway(NO_LIMITS, {
    GATEWAY_WORKERS: '2',
    PORTICO_CONFIG: link,
    PORTICO_AUDIT_LOG: auditLog,
    PORTICO_ADMIN_TOKEN: TOKEN,
  });
  await gateway.waitForLog('gateway workers listening', 40_000);
  authorization = `Bearer ${await fixture.token(freshCustomer())}`;
}, 60_000);
afterAll(async () => {
  await fixture?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `POST /config/reload` on a connection of its own (so each may reach another worker). */
async function reloadEndpoint(
  timeoutMs = 20_000,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const agent = new Agent();
  try {
    const response = await request(`http://127.0.0.1:${gateway.adminPort}/config/reload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{}',
      dispatcher: agent,
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
  } finally {
    void agent.destroy();
  }
}

const reloadCommand = () =>
  runCommand(process.execPath, ['scripts/reload.ts'], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'], ADMIN_PORT: String(gateway.adminPort), PORTICO_ADMIN_TOKEN: TOKEN },
  });

/**
 * SPREAD requests to `path` on new connections: their statuses, and from the audit log how many
 * of them each worker (by slot) answered with 200.
 */
async function spread(path: string): Promise<{ statuses: number[]; okBySlot: Record<string, number> }> {
  const unique = `${path}/${randomUUID()}`;
  const statuses = await onNewConnections(gateway.port, authorization, SPREAD, unique);
  // Past the audit writer's 5 ms batch.
  await new Promise((r) => setTimeout(r, 300));
  const okBySlot: Record<string, number> = {};
  for (const line of readFileSync(auditLog, 'utf8').split('\n')) {
    if (line === '') continue;
    const record = JSON.parse(line) as { chain?: string; path?: string; status?: number };
    if (record.path === unique && record.status === 200)
      okBySlot[String(record.chain)] = (okBySlot[String(record.chain)] ?? 0) + 1;
  }
  return { statuses, okBySlot };
}

const allOk = Array.from({ length: SPREAD }, () => 200);

async function metrics(): Promise<string> {
  const response = await request(`http://127.0.0.1:${gateway.adminPort}/metrics`);
  return response.body.text();
}

describe('GATEWAY_WORKERS=2: a reload reaches every worker', () => {
  it('a route added and reloaded through the endpoint is served by both workers; the answer says each', async () => {
    const before = await spread('/v2/items');
    expect(before.statuses).toEqual(Array.from({ length: SPREAD }, () => 404));

    const text = configWith(['/v2']);
    const { status, body } = await reloadEndpoint();
    expect(status).toBe(200);
    expect(body).toMatchObject({ outcome: 'applied', version: version(text), applied: ['routes'] });
    expect(body['message']).toBe(`applied ${version(text)} on all 2 workers: routes`);
    const pids = workerPids(gateway).sort((a, b) => a - b);
    const workers = body['workers'] as { worker: number; pid: number; outcome: string }[];
    expect(workers.map((w) => w.worker)).toEqual([1, 2]);
    expect(workers.map((w) => w.pid).sort((a, b) => a - b)).toEqual(pids);
    for (const worker of workers)
      expect(worker).toMatchObject({ outcome: 'applied', version: version(text), applied: ['routes'] });

    const after = await spread('/v2/items');
    expect(after.statuses).toEqual(allOk);
    // Both workers answered the new route (and, above, every answer was a 200).
    expect(after.okBySlot['1']).toBeGreaterThan(0);
    expect(after.okBySlot['2']).toBeGreaterThan(0);
  });

  it('through `npm run -s reload`: exit 0, one line per worker, and both serve the route', async () => {
    const text = configWith(['/v2', '/v3']);
    const result = await reloadCommand();
    expect(result.code, result.stderr).toBe(0);
    const v = version(text);
    expect(result.stdout).toMatch(
      new RegExp(
        `^applied ${v} on all 2 workers: routes\\n` +
          `  worker 1 \\(pid \\d+\\): applied ${v}: routes\\n` +
          `  worker 2 \\(pid \\d+\\): applied ${v}: routes\\n$`,
      ),
    );
    const after = await spread('/v3/items');
    expect(after.statuses).toEqual(allOk);
    expect(after.okBySlot['1']).toBeGreaterThan(0);
    expect(after.okBySlot['2']).toBeGreaterThan(0);
  });

  it('/metrics: the version once (not summed), reloads counted per worker, the last reload valid', async () => {
    const v = version(readFileSync(configFile, 'utf8'));
    const text = await metrics();
    // One series, 1: both workers run it. A sum would say 2; a worker left behind, a second series.
    expect(text.match(/^portico_config_info\{.*$/gm)).toEqual([`portico_config_info{version="${v}"} 1`]);
    expect(text).toMatch(/^portico_config_last_reload_success 1$/m);
    // Two reloads, each of two workers; the watchers saw nothing (edited through a hard link).
    expect(text).toMatch(/^portico_config_reloads_total\{result="applied"\} 4$/m);
    const stamp = Number(/^portico_config_last_reload_timestamp_seconds (\S+)$/m.exec(text)?.[1]);
    expect(Math.abs(stamp - Date.now() / 1000)).toBeLessThan(120);
  });

  it("the dashboard: each worker's version and last reload, whichever worker answers", async () => {
    const v = version(readFileSync(configFile, 'utf8'));
    const pids = workerPids(gateway).sort((a, b) => a - b);
    // Each on a connection of its own: both workers answer some of them, and all say the same.
    for (let i = 0; i < 4; i++) {
      const agent = new Agent();
      const response = await request(`http://127.0.0.1:${gateway.adminPort}/dashboard.json`, {
        dispatcher: agent,
      });
      const { config } = (await response.body.json()) as { config: Record<string, unknown> };
      await agent.close();
      expect(config['version']).toBe(v);
      const workers = config['workers'] as { worker: number; pid: number; version: string }[];
      expect(workers.map((w) => w.worker)).toEqual([1, 2]);
      expect(workers.map((w) => w.pid).sort((a, b) => a - b)).toEqual(pids);
      for (const worker of workers)
        expect(worker).toMatchObject({ version: v, lastReload: { outcome: 'applied', version: v } });
    }
  });

  it('a refused file: 422 and exit 1 naming both workers; both keep running what they ran', async () => {
    const running = readFileSync(configFile, 'utf8');
    const pids = workerPids(gateway);
    const refused = configWith(['/v2', '/v3', '/v4'], { listenr: {} });
    const { status, body } = await reloadEndpoint();
    expect(status).toBe(422);
    expect(body).toMatchObject({ outcome: 'refused', problems: ['listenr: unknown key'] });
    expect(body['message']).toBe(
      `refused ${version(refused)} by workers 1, 2 of 2: they keep the running config`,
    );
    for (const worker of body['workers'] as Record<string, unknown>[])
      expect(worker).toMatchObject({ outcome: 'refused', problems: ['listenr: unknown key'] });

    const command = await reloadCommand();
    expect(command.code).toBe(1);
    expect(command.stderr).toMatch(
      new RegExp(
        `^refused ${version(refused)} by workers 1, 2 of 2: they keep the running config\\n` +
          '  listenr: unknown key\\n' +
          `  worker 1 \\(pid \\d+\\): refused ${version(refused)}: the running config stays\\n` +
          `  worker 2 \\(pid \\d+\\): refused ${version(refused)}: the running config stays\\n$`,
      ),
    );

    expect(workerPids(gateway).sort()).toEqual(pids.sort());
    const kept = await spread('/v3/items');
    expect(kept.statuses).toEqual(allOk);
    expect(kept.okBySlot['1']).toBeGreaterThan(0);
    expect(kept.okBySlot['2']).toBeGreaterThan(0);
    expect((await spread('/v4/items')).statuses).toEqual(Array.from({ length: SPREAD }, () => 404));
    const text = await metrics();
    expect(text).toMatch(/^portico_config_last_reload_success 0$/m);
    expect(text).toMatch(/^portico_config_reloads_total\{result="refused"\} 4$/m);
    expect(text.match(/^portico_config_info\{.*$/gm)).toEqual([
      `portico_config_info{version="${version(running)}"} 1`,
    ]);
  });

  it('a worker that does not answer is reported after the bound (504), the other one reloads', async () => {
    const text = configWith(['/v2', '/v3', '/v5']);
    const [stopped, live] = workerPids(gateway);
    process.kill(stopped!, 'SIGSTOP');
    try {
      // The admin connection may be handed to the stopped worker: that one never answers, and
      // the listener gives it no other connection until it takes this one, so the next goes to
      // the live worker.
      let answer: Awaited<ReturnType<typeof reloadEndpoint>> | undefined;
      for (let attempt = 0; attempt < 3 && answer === undefined; attempt++)
        answer = await reloadEndpoint(12_000).catch(() => undefined);
      expect(answer?.status).toBe(504);
      expect(answer?.body).toMatchObject({ outcome: 'incomplete', version: version(text) });
      const workers = answer?.body['workers'] as { pid: number; outcome: string; message: string }[];
      expect(workers.find((w) => w.pid === live)).toMatchObject({ outcome: 'applied', applied: ['routes'] });
      expect(workers.find((w) => w.pid === stopped)).toMatchObject({
        outcome: 'no answer',
        message: 'did not answer within 5 s',
      });
      expect(answer?.body['message']).toMatch(
        new RegExp(`^incomplete ${version(text)}: no answer from worker [12] of 2$`),
      );
    } finally {
      process.kill(stopped!, 'SIGCONT');
    }
  }, 60_000);
});
