/**
 * Outside development the gateway trusts only a configured issuer: the development issuer's
 * keys live in each process's data dir, so N replicas would be N issuers (a token accepted by
 * one of them). With NODE_ENV=production (the image's ENV) and a route that takes tokens, a
 * config without auth.jwt's keys is refused at start, by path, before any key is made.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { ConfigError, parseConfig } from '../../gateway/config/load.ts';
import { ROOT } from './support/deploy-files.ts';

const production = { NODE_ENV: 'production' };
const problemsOf = (input: unknown, env: NodeJS.ProcessEnv): readonly string[] => {
  try {
    parseConfig(input, { env });
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
};
const dir = mkdtempSync(join(tmpdir(), 'portico-production-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('NODE_ENV=production', () => {
  it('refuses a config whose routes take tokens but names no issuer', () => {
    expect(problemsOf({}, production)).toEqual([expect.stringMatching(/^auth\.jwt: /)]);
    // Development and tests keep the zero-configuration issuer.
    expect(problemsOf({}, {})).toEqual([]);
    expect(problemsOf({}, { NODE_ENV: 'development' })).toEqual([]);
  });

  it('accepts a configured issuer, or routes that take no token', () => {
    const jwt = {
      jwksUrl: 'https://idp.example.com/jwks',
      issuer: 'https://idp.example.com/',
      audience: 'portico',
    };
    expect(problemsOf({ auth: { jwt } }, production)).toEqual([]);
    const open = { routes: [{ prefix: '/v1', upstream: 'https://127.0.0.1:8081', auth: 'none' }] };
    expect(problemsOf(open, production)).toEqual([]);
  });

  it('the gateway process exits 1 naming auth.jwt, and makes no development issuer', async () => {
    const dataDir = join(dir, 'data');
    const child = spawn(process.execPath, [join(ROOT, 'gateway/main.ts')], {
      env: {
        PATH: process.env['PATH'],
        NODE_ENV: 'production',
        PORTICO_DATA_DIR: dataDir,
        GATEWAY_PORT: '0',
        ADMIN_PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Killed after the test whatever happens: a gateway that started would run on.
    onTestFinished(() => void child.kill('SIGKILL'));
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => {
      child.once('exit', resolve);
      // A gateway that does not refuse starts and runs: say so rather than wait for the timeout.
      setTimeout(() => resolve(-1), 20_000).unref();
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/auth\.jwt: /);
    expect(existsSync(join(dataDir, 'dev-issuer'))).toBe(false);
  });
});
