/**
 * `npm run -s reload`: the running gateway reloads its config file through the admin listener
 * (`POST /config/reload`, with the admin token) and the command exits by the result: 0 applied
 * or unchanged, 1 refused (the running config stays), 2 usage. A changed route is served by
 * the next request; a key that needs a restart is named. `/metrics` names the file version
 * running (its digest) and whether the last reload was valid.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../support/run-command.ts';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../support/harness.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const TOKEN = 'reload-test-admin-token-0123456789abcdef';
let upstream: RecordingUpstream;
let other: RecordingUpstream;
let gw: GatewayProcess & { configFile: string };
// The gateway process serves the self-signed development certificate of its data dir.
const insecureLocalAgent = new Agent({ connect: { rejectUnauthorized: false } });

const config = (limit: number, target = upstream.url) => ({
  routes: [{ prefix: '/v1', upstream: target, auth: 'none' }],
  rateLimits: { policies: [{ name: 'default', key: 'ip', limit, window: '60s' }] },
});
const version = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  other = await startRecordingUpstream();
  gw = await startGatewayProcess(config(100), { PORTICO_ADMIN_TOKEN: TOKEN });
});
afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
  await other?.close();
  await insecureLocalAgent.close();
});

const reload = (args: string[] = [], token = TOKEN) =>
  runCommand(process.execPath, ['scripts/reload.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'], ADMIN_PORT: String(gw.adminPort), PORTICO_ADMIN_TOKEN: token },
  });

async function metrics(): Promise<string> {
  const response = await request(`http://127.0.0.1:${gw.adminPort}/metrics`);
  return response.body.text();
}

describe('npm run -s reload', () => {
  it('an unchanged file: exit 0, says so, with the version', async () => {
    const result = await reload();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^unchanged [0-9a-f]{12}: nothing that reloads has changed\n$/);
  });

  it('changed limits: exit 0, and /metrics names the version', async () => {
    const text = JSON.stringify(config(5));
    writeFileSync(gw.configFile, text);
    const result = await reload();
    expect(result.code, result.stderr).toBe(0);
    // The file watcher may have applied it first: then this reload finds it unchanged.
    expect(result.stdout).toMatch(
      new RegExp(`^(applied ${version(text)}: rateLimits|unchanged ${version(text)}:)`),
    );
    const text2 = await metrics();
    expect(text2).toContain(`portico_config_info{version="${version(text)}"} 1`);
    expect(text2).toContain('portico_config_last_reload_success 1');
  });

  it('a changed route: exit 0, applied on a new pipeline, and the next request takes it', async () => {
    const text = JSON.stringify(config(5, other.url));
    writeFileSync(gw.configFile, text);
    const result = await reload();
    expect(result.code, result.stderr).toBe(0);
    // The file watcher may have applied it first: then this reload finds it unchanged.
    expect(result.stdout).toMatch(
      new RegExp(`^(applied ${version(text)}: routes|unchanged ${version(text)}:)`),
    );
    const before = other.records.length;
    const response = await request(`https://localhost:${gw.port}/v1/moved`, {
      dispatcher: insecureLocalAgent,
    });
    await response.body.text();
    expect(response.statusCode).toBe(200);
    expect(other.records.slice(before).map((record) => record.url)).toEqual(['/v1/moved']);
  });

  it('a change that needs a restart: exit 0, named by key, and the rest applies', async () => {
    const text = JSON.stringify({ ...config(7, other.url), admin: { readinessTimeoutMs: 1234 } });
    writeFileSync(gw.configFile, text);
    const result = await reload();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/needs a restart: admin\.readinessTimeoutMs\n$/);
  });

  it('an invalid file: exit 1 with every problem; the running config and version stay', async () => {
    const running = JSON.stringify({ ...config(7, other.url), admin: { readinessTimeoutMs: 1234 } });
    writeFileSync(gw.configFile, JSON.stringify({ ...config(5), listenr: {} }));
    const result = await reload();
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^refused [0-9a-f]{12}: the running config stays\n {2}listenr: unknown key\n/,
    );
    const text = await metrics();
    expect(text).toContain('portico_config_last_reload_success 0');
    expect(text).toMatch(/portico_config_reloads_total\{result="refused"\} [1-9]/);
    expect(text).toContain(`portico_config_info{version="${version(running)}"} 1`);
    // The dashboard says the same: the version running, the last reload refused.
    const snapshot = (await (
      await request(`http://127.0.0.1:${gw.adminPort}/dashboard.json`)
    ).body.json()) as {
      config?: { version: string; lastReload?: { outcome: string; message: string } };
    };
    expect(snapshot.config).toMatchObject({ version: version(running), lastReload: { outcome: 'refused' } });
    expect(snapshot.config?.lastReload?.message).toMatch(
      /^refused [0-9a-f]{12}: the running config stays\nlistenr: unknown key/,
    );
  });

  it('a wrong admin token is not done (exit 1); an argument is a usage error (2)', async () => {
    const wrong = await reload([], 'x'.repeat(40));
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^reload: not done \(HTTP 401/);
    const usage = await reload(['now']);
    expect(usage.code).toBe(2);
  });
});
