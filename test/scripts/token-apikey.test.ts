/**
 * The `token` and `apikey` commands as users run them (child processes, environment only),
 * against a gateway authenticator on the same data dir and Redis.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createAuthenticator, type Authenticator } from '../../gateway/identity/authenticate.ts';
import {
  authConfig,
  expectInvalidToken,
  expectPrincipal,
  memoryLogger,
  tempDir,
} from '../gateway/identity/support/fixtures.ts';

const execFileAsync = promisify(execFile);
const script = (name: string) => new URL(`../../scripts/${name}.ts`, import.meta.url).pathname;
const open: Authenticator[] = [];
const redises: Redis[] = [];

async function run(name: string, args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [script(name), ...args], {
      env: { PATH: process.env['PATH'] ?? '', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function gateway(dataDir: string, redis?: Redis) {
  const auth = createAuthenticator(authConfig(), {
    dataDir,
    logger: memoryLogger().logger,
    env: {},
    ...(redis === undefined ? {} : { redis }),
  });
  open.push(auth);
  return auth;
}

/** A data dir and a gateway authenticator on Redis under this run's prefix plus `suffix`. */
async function redisGateway(suffix: string) {
  const dataDir = tempDir('cli-apikey');
  const prefix = `${inject('redisPrefix')}${suffix}`;
  const env = { PORTICO_DATA_DIR: dataDir, REDIS_URL: inject('redisUrl'), PORTICO_REDIS_PREFIX: prefix };
  const redis = new Redis(inject('redisUrl'), {
    keyPrefix: prefix,
    enableOfflineQueue: false,
    commandTimeout: 2000,
  });
  redises.push(redis);
  await new Promise((resolve) => redis.once('ready', resolve));
  return { dataDir, prefix, env, auth: gateway(dataDir, redis) };
}

afterAll(() => {
  for (const a of open) a.close();
  for (const r of redises) r.disconnect();
});

describe('npm run -s token', () => {
  it('prints only a token that a gateway on the same data dir accepts', async () => {
    const dataDir = tempDir('cli-token');
    const result = await run('token', ['--customer', 'cust-42', '--scope', 'orders:read', '--ttl', '120'], {
      PORTICO_DATA_DIR: dataDir,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    const outcome = expectPrincipal(
      await gateway(dataDir).authenticate({ authorization: `Bearer ${result.stdout.trim()}` }, '/v1/orders'),
    );
    expect(outcome.principal).toMatchObject({
      customerId: 'cust-42',
      scopes: ['orders:read'],
      authMethod: 'jwt',
    });
  });

  it('defaults to the four customer scopes; --admin adds admin', async () => {
    const dataDir = tempDir('cli-token');
    const plain = await run('token', ['--customer', 'c1'], { PORTICO_DATA_DIR: dataDir });
    const admin = await run('token', ['--customer', 'c1', '--admin'], { PORTICO_DATA_DIR: dataDir });
    const auth = gateway(dataDir);
    const scopes = async (token: string) =>
      expectPrincipal(await auth.authenticate({ authorization: `Bearer ${token.trim()}` }, '/')).principal
        .scopes;
    expect(await scopes(plain.stdout)).toEqual([
      'orders:read',
      'orders:write',
      'payments:write',
      'invoices:read',
    ]);
    expect(await scopes(admin.stdout)).toContain('admin');
  });

  it('bad arguments print usage on stderr and exit 2', async () => {
    const env = { PORTICO_DATA_DIR: tempDir('cli-token') };
    for (const args of [
      [],
      ['--customer'],
      ['--customer', 'bad id'],
      ['--customer', 'c', '--ttl', '0'],
      ['--nope'],
    ]) {
      const result = await run('token', args, env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/usage: npm run -s token/);
    }
  });
});

describe('npm run -s apikey', () => {
  it('creates, lists and revokes keys in Redis; the gateway refuses a revoked key at once', async () => {
    const { env, auth } = await redisGateway('cli:');

    const created = await run('apikey', ['create', '--customer', 'cust-5', '--scope', 'orders:read'], env);
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^pk_/);
    const id = /created (ak_[\w-]{22})/.exec(created.stderr)?.[1];
    expect(id).toBeDefined();
    const outcome = expectPrincipal(await auth.authenticate({ authorization: `ApiKey ${key}` }, '/'));
    expect(outcome.principal).toMatchObject({ customerId: 'cust-5', scopes: ['orders:read'], keyId: id });

    const listed = await run('apikey', ['list'], env);
    expect(listed.stdout).toContain(`${id}\tcust-5\torders:read\t`);
    expect(listed.stdout).not.toContain(key);

    expect((await run('apikey', ['revoke', id!], env)).code).toBe(0);
    expectInvalidToken(await auth.authenticate({ authorization: `ApiKey ${key}` }, '/'), /revoked/);
    expect((await run('apikey', ['list'], env)).stdout).toMatch(
      new RegExp(`${id}\\t.*\\t20\\d\\d-[^\\t]+\\n`),
    );
  });

  it('without Redis, records go to the data dir and the gateway picks the revocation up', async () => {
    const dataDir = tempDir('cli-apikey');
    const env = { PORTICO_DATA_DIR: dataDir };
    const created = await run('apikey', ['create', '--customer', 'cust-6'], env);
    const key = created.stdout.trim();
    const id = /created (ak_[\w-]{22})/.exec(created.stderr)?.[1];
    const auth = gateway(dataDir);
    expectPrincipal(await auth.authenticate({ authorization: `ApiKey ${key}` }, '/'));
    expect((await run('apikey', ['list'], env)).stdout).toContain(`${id}\tcust-6\t`);
    await run('apikey', ['revoke', id!], env);
    await expect
      .poll(async () => (await auth.authenticate({ authorization: `ApiKey ${key}` }, '/')).ok, {
        timeout: 5000,
      })
      .toBe(false);
  });

  it('revoke against a store that never minted the key exits 1, names that store and writes nothing', async () => {
    // From the operator's side of the attack: the gateway reads Redis under one prefix; the
    // revoke runs without REDIS_URL, or under another prefix. It used to print "revoked",
    // exit 0, and the key kept working.
    const { dataDir, prefix, env: gatewayEnv, auth } = await redisGateway('cli-store:');
    const created = await run('apikey', ['create', '--customer', 'cust-7'], gatewayEnv);
    const key = created.stdout.trim();
    const id = /created (ak_[\w-]{22})/.exec(created.stderr)?.[1];
    expect(id).toBeDefined();

    const noRedis = await run('apikey', ['revoke', id!], { PORTICO_DATA_DIR: dataDir });
    expect(noRedis.code).toBe(1);
    expect(noRedis.stdout).toBe('');
    expect(noRedis.stderr).toContain(`${dataDir}/apikeys.jsonl`);
    expect(noRedis.stderr).toMatch(/not revoked/);
    const otherPrefix = `${inject('redisPrefix')}cli-other:`;
    const wrongPrefix = await run('apikey', ['revoke', id!], {
      ...gatewayEnv,
      PORTICO_REDIS_PREFIX: otherPrefix,
    });
    expect(wrongPrefix.code).toBe(1);
    expect(wrongPrefix.stdout).toBe('');
    expect(wrongPrefix.stderr).toContain(`prefix "${otherPrefix}"`);
    expect(wrongPrefix.stderr).toMatch(/not revoked/);
    // Nothing was written to either store, and the key still works: the exit code said so.
    expect((await run('apikey', ['list'], { PORTICO_DATA_DIR: dataDir })).stdout).not.toContain(id!);
    expectPrincipal(await auth.authenticate({ authorization: `ApiKey ${key}` }, '/'));

    // Against the store the gateway reads, it says where it wrote, and the key stops working.
    const done = await run('apikey', ['revoke', id!], gatewayEnv);
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(new RegExp(`^revoked ${id} in Redis .*prefix "${prefix}"`));
    expectInvalidToken(await auth.authenticate({ authorization: `ApiKey ${key}` }, '/'), /revoked/);
  });

  it('revoke of an unknown key id exits 1 unless --force, which records it and says where', async () => {
    const dataDir = tempDir('cli-apikey');
    const env = { PORTICO_DATA_DIR: dataDir };
    const unknown = 'ak_AAAAAAAAAAAAAAAAAAAAAA';
    const refused = await run('apikey', ['revoke', unknown], env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(unknown);
    expect(refused.stderr).toContain(`${dataDir}/apikeys.jsonl`);
    // A key minted with a store since lost can still be revoked, knowingly.
    const forced = await run('apikey', ['revoke', '--force', unknown], env);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain(`revoked ${unknown} in ${dataDir}/apikeys.jsonl`);
  });

  it('bad arguments print usage and exit 2', async () => {
    const env = { PORTICO_DATA_DIR: tempDir('cli-apikey') };
    for (const args of [[], ['create'], ['revoke'], ['revoke', 'nope'], ['frobnicate'], ['list', 'x']]) {
      const result = await run('apikey', args, env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(/usage: npm run -s apikey/);
    }
  });
});
