/**
 * `npm run -s reload`: the running gateway reloads its config file through the admin listener
 * (`POST /config/reload`, with the admin token) and the command exits by the result: 0 applied
 * or unchanged, 1 refused (the running config stays), 2 usage. `/metrics` names the file version
 * running (its digest) and whether the last reload was valid.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../support/run-command.ts';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../support/harness.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const TOKEN = 'reload-test-admin-token-0123456789abcdef';
let upstream: RecordingUpstream;
let gw: GatewayProcess & { configFile: string };

const config = (limit: number) => ({
  routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none' }],
  rateLimits: { policies: [{ name: 'default', key: 'ip', limit, window: '60s' }] },
});
const version = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startGatewayProcess(config(100), { PORTICO_ADMIN_TOKEN: TOKEN });
});
afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
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

  it('a changed file: exit 0, and /metrics names its version', async () => {
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

  it('an invalid file: exit 1 with every problem; the running config and version stay', async () => {
    const running = JSON.stringify(config(5));
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
      config?: { version: string; lastReload?: { outcome: string } };
    };
    expect(snapshot.config).toMatchObject({ version: version(running), lastReload: { outcome: 'refused' } });
  });

  it('a wrong admin token is not done (exit 1); an argument is a usage error (2)', async () => {
    const wrong = await reload([], 'x'.repeat(40));
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^reload: not done \(HTTP 401/);
    const usage = await reload(['now']);
    expect(usage.code).toBe(2);
  });
});
