/**
 * Plain HTTP on the internal hop is an operator's explicit choice, said at every start: the
 * gateway warns per http: upstream, the service when SERVICE_PLAIN_HTTP=true. With nothing
 * configured, both say that they use the data dir's development CA, and the gateway's default
 * route is https: with that CA's files, which the start creates.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { inject } from 'vitest';
import { describe, expect, it } from 'vitest';
import { runGateway } from '../../../gateway/run.ts';
import { runService } from '../../../resource-service/run.ts';
import { devPkiFiles } from '../../../shared/dev-pki.ts';

function capture() {
  const lines: { level: number; msg: string }[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n'))
        if (line !== '') lines.push(JSON.parse(line) as { level: number; msg: string });
      callback();
    },
  });
  const warnings = () => lines.filter((line) => line.level === 40).map((line) => line.msg);
  return { log: pino({ level: 'info' }, destination), warnings };
}

const KEYS = `w:${randomBytes(32).toString('base64')}`;
const baseEnv = (dataDir: string) => ({
  PORTICO_DATA_DIR: dataDir,
  GATEWAY_PORT: '0',
  ADMIN_PORT: '0',
  PORTICO_ASSERTION_KEYS: KEYS,
  PORTICO_AUDIT_LOG: join(dataDir, 'audit.log'),
});

describe('the internal transport at start', () => {
  it('the gateway warns about each plain-HTTP upstream it was told to use', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'portico-warn-'));
    const config = join(dataDir, 'portico.yaml');
    writeFileSync(config, "routes:\n  - { prefix: /v1, upstream: 'http://127.0.0.1:9' }\n");
    const { log, warnings } = capture();
    const running = await runGateway({ ...baseEnv(dataDir), PORTICO_CONFIG: config }, log);
    await running.stop();
    expect(warnings()).toContain('plain HTTP to this upstream: anyone on that network reads its traffic');
    // No route uses the default service origin: no development CA made, none announced.
    expect(existsSync(devPkiFiles(dataDir).caFile)).toBe(false);
    expect(warnings().filter((msg) => msg.includes('development CA'))).toEqual([]);
  });

  it('with nothing configured, the gateway routes over https: with the development CA it creates', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'portico-warn-'));
    const { log, warnings } = capture();
    const running = await runGateway(baseEnv(dataDir), log);
    await running.stop();
    // The default routes: /v1, /v1/openapi.json and /v1/docs, all to the service.
    expect(running.config.routes.map((route) => route.upstream)).toEqual([
      'https://127.0.0.1:8081',
      'https://127.0.0.1:8081',
      'https://127.0.0.1:8081',
    ]);
    expect(existsSync(devPkiFiles(dataDir).clientKeyFile)).toBe(true);
    expect(warnings()).toContain(
      'no GATEWAY_UPSTREAM_* files: mutual TLS to the service with the development CA of the data dir',
    );
    expect(warnings().filter((msg) => msg.startsWith('plain HTTP'))).toEqual([]);
  });

  it('the service warns when SERVICE_PLAIN_HTTP=true asks for plain HTTP, and serves it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'portico-warn-'));
    const { log, warnings } = capture();
    const env = { ...baseEnv(dataDir), SERVICE_PORT: '0', SERVICE_PLAIN_HTTP: 'true' };
    const running = await runService(env, log, { url: inject('databaseUrl') });
    await running.stop();
    expect(running.service.url).toMatch(/^http:\/\//);
    expect(warnings()).toEqual([expect.stringContaining('SERVICE_PLAIN_HTTP=true')]);
  });
});
