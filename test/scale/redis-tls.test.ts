/**
 * TLS to Redis in every deployment (docs/redis.md): one node, a Cluster (data nodes and the
 * cluster bus) and Sentinel (the sentinels and the master and replica they name), each started
 * TLS only (`port 0`, `tls-port`, client certificates required) with certificates made here.
 * Gateway processes configured only by REDIS_TLS* variables become ready, share a limit and hear
 * each other's invalidations; a plain connection to a TLS-only Redis fails, saying why.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { childEnv } from '../../measure/bench/children.ts';
import { createRedisConnection, explainRedisError, redisTargetFromEnv } from '../../shared/redis.ts';
import { createTestPki, type TestPki } from '../support/internal-pki.ts';
import { startRedisCluster } from '../support/redis-cluster.ts';
import { createRedisNodes, type RedisNodes, type RedisNodesTls } from '../support/redis-nodes.ts';
import { startRedisSentinel } from '../support/redis-sentinel.ts';
import {
  freshCustomer,
  invalidationCrosses,
  LIMIT,
  policy,
  startScaleFixture,
  type ScaleFixture,
} from './support/scale-fixture.ts';

const APIKEY = new URL('../../scripts/apikey.ts', import.meta.url).pathname;

let pki: TestPki;
let tls: RedisNodesTls;
let fixture: ScaleFixture;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  pki = await createTestPki('redis-tls-ca');
  tls = { caFile: pki.caFile, ca: pki.ca.cert, server: pki.server, client: pki.client };
  fixture = await startScaleFixture();
}, 30_000);

afterAll(async () => {
  await fixture?.close();
  for (const stop of stops.splice(0).reverse()) await stop();
  if (pki !== undefined) rmSync(pki.dir, { recursive: true, force: true });
});

/** The REDIS_TLS_* files: this test's CA, and the client certificate Redis requires. */
const tlsFiles = () => ({
  REDIS_TLS_CA_FILE: pki.caFile,
  REDIS_TLS_CERT_FILE: pki.client.certFile,
  REDIS_TLS_KEY_FILE: pki.client.keyFile,
});

async function oneNode(): Promise<number> {
  const fleet: RedisNodes = createRedisNodes('tls-one', { tls });
  stops.push(() => fleet.stopAll());
  return (await fleet.start([])).port;
}

/**
 * Two gateways on `env`'s Redis: both ready, one limit between them, and a write through one
 * invalidating what the other cached.
 */
async function twoGatewaysShare(env: Record<string, string>): Promise<void> {
  const prefix = { PORTICO_REDIS_PREFIX: `tls-${freshCustomer()}:` };
  const one = await fixture.gateway(policy('deny'), { ...env, ...prefix });
  const two = await fixture.gateway(policy('deny'), { ...env, ...prefix });
  await fixture.untilReady(one.adminPort, 15_000);
  await fixture.untilReady(two.adminPort, 15_000);
  const auth = `Bearer ${await fixture.token(freshCustomer())}`;
  const statuses = await Promise.all(
    Array.from({ length: LIMIT + 6 }, (_, i) =>
      fixture.call(i % 2 === 0 ? one.port : two.port, auth).then((r) => r.status),
    ),
  );
  expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
  expect(statuses.filter((s) => s === 429)).toHaveLength(6);
  expect(await invalidationCrosses(fixture, one, two)).toContain('fwd=uri-miss');
  expect(await invalidationCrosses(fixture, two, one)).toContain('fwd=uri-miss');
  await Promise.all([one.stop(), two.stop()]);
}

describe('TLS to Redis', () => {
  it('one node named rediss://, with the CA, client certificate and server name from REDIS_TLS_*', async () => {
    const port = await oneNode();
    // 127.0.0.1 is in the certificate too; the name checked is the one REDIS_TLS_SERVERNAME sets.
    await twoGatewaysShare({
      REDIS_URL: `rediss://127.0.0.1:${port}`,
      ...tlsFiles(),
      REDIS_TLS_SERVERNAME: 'localhost',
    });
  }, 60_000);

  it('Redis Cluster: every data node, the nodes it names included, over TLS', async () => {
    const cluster = await startRedisCluster({ tls });
    stops.push(() => cluster.stop());
    await twoGatewaysShare({ REDIS_CLUSTER_NODES: cluster.seeds, REDIS_TLS: 'true', ...tlsFiles() });
  }, 90_000);

  it('Sentinel: the sentinels and the master they name, over TLS', async () => {
    const sentinel = await startRedisSentinel({ tls });
    stops.push(() => sentinel.stop());
    await twoGatewaysShare({
      REDIS_SENTINELS: sentinel.addresses,
      REDIS_SENTINEL_NAME: sentinel.name,
      REDIS_TLS: 'true',
      ...tlsFiles(),
    });
  }, 90_000);

  it('a plain connection to a TLS-only Redis fails, and the gateway says what to set', async () => {
    const port = await oneNode();
    const gateway = await fixture.gateway(policy('deny'), { REDIS_URL: `redis://127.0.0.1:${port}` });
    const line = await gateway.waitForLog('Redis not reachable yet: starting degraded, retrying');
    expect(String(line['reason'])).toContain('rediss://');
    expect(String(line['reason'])).toContain('REDIS_TLS=true');
    // Not ready, and a request under a `deny` policy is refused, not counted nowhere.
    const auth = `Bearer ${await fixture.token(freshCustomer())}`;
    expect((await fixture.call(gateway.port, auth)).status).toBe(503);
    await gateway.stop();
  }, 30_000);

  it('the apikey command against a TLS-only Redis over plain TCP fails saying what to set', async () => {
    const port = await oneNode();
    const run = promisify(execFile);
    const failed = await run(process.execPath, [APIKEY, 'list'], {
      env: { PATH: process.env['PATH'], REDIS_URL: `redis://127.0.0.1:${port}` },
      timeout: 20_000,
    }).then(
      () => undefined,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain('does not answer within 5 s');
    expect(failed?.stderr).toContain('name it rediss://');
  }, 30_000);

  it('names the likely cause of each TLS failure and the setting that fixes it', async () => {
    const port = await oneNode();
    const plainPort = Number(new URL(inject('redisUrl')).port || 6379);
    const firstError = async (env: Record<string, string>) => {
      const target = redisTargetFromEnv(env)!;
      const client = createRedisConnection(target, { commandTimeoutMs: 2000 });
      try {
        const error = await new Promise<Error>((resolve) => client.once('error', resolve));
        return explainRedisError(error, target.tls !== undefined);
      } finally {
        client.disconnect();
      }
    };
    const url = `rediss://127.0.0.1:${port}`;
    const { REDIS_TLS_CA_FILE } = tlsFiles();
    expect(await firstError({ REDIS_URL: url, REDIS_TLS_CA_FILE })).toContain('REDIS_TLS_CERT_FILE');
    expect(
      await firstError({ REDIS_URL: url, ...tlsFiles(), REDIS_TLS_SERVERNAME: 'other.example' }),
    ).toContain('REDIS_TLS_SERVERNAME');
    const { REDIS_TLS_CERT_FILE, REDIS_TLS_KEY_FILE } = tlsFiles();
    expect(await firstError({ REDIS_URL: url, REDIS_TLS_CERT_FILE, REDIS_TLS_KEY_FILE })).toContain(
      'REDIS_TLS_CA_FILE names the CA',
    );
    expect(await firstError({ REDIS_URL: `rediss://127.0.0.1:${plainPort}`, ...tlsFiles() })).toContain(
      'speaks plain TCP, not TLS',
    );
  }, 30_000);

  it("bench and soak children do not inherit the caller's Redis settings, TLS ones included", () => {
    const names = ['REDIS_TLS', 'REDIS_TLS_CA_FILE', 'REDIS_USERNAME', 'REDIS_SENTINEL_NAME'];
    const saved = names.map((name) => [name, process.env[name]] as const);
    try {
      for (const name of names) process.env[name] = name === 'REDIS_TLS' ? 'true' : 'x';
      // The child is pointed at the bench's own Redis: REDIS_TLS=true beside redis:// would refuse
      // its start, as would REDIS_USERNAME beside REDIS_URL.
      const env = childEnv('warn', { REDIS_URL: 'redis://127.0.0.1:6379' });
      expect(Object.keys(env).filter((name) => name.startsWith('REDIS_'))).toEqual(['REDIS_URL']);
      expect(() => redisTargetFromEnv(env)).not.toThrow();
    } finally {
      for (const [name, value] of saved) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('refuses settings that cannot take effect, naming them', () => {
    const file = { REDIS_TLS_CA_FILE: '/nonexistent/ca.crt' };
    expect(() => redisTargetFromEnv({ REDIS_URL: 'redis://h:6379', REDIS_TLS_CA_FILE: pki.caFile })).toThrow(
      /REDIS_TLS_CA_FILE is set but TLS to Redis is off/,
    );
    expect(() => redisTargetFromEnv({ REDIS_CLUSTER_NODES: 'h:1', REDIS_TLS_SERVERNAME: 'x' })).toThrow(
      /REDIS_TLS_SERVERNAME is set but TLS to Redis is off/,
    );
    expect(() => redisTargetFromEnv({ REDIS_URL: 'redis://h:6379', REDIS_TLS: 'true' })).toThrow(
      /contradicts REDIS_URL's scheme/,
    );
    expect(() => redisTargetFromEnv({ REDIS_CLUSTER_NODES: 'h:1', REDIS_TLS: 'yes' })).toThrow(
      /REDIS_TLS must be true or false/,
    );
    expect(() =>
      redisTargetFromEnv({
        REDIS_CLUSTER_NODES: 'h:1',
        REDIS_TLS: 'true',
        REDIS_TLS_CERT_FILE: pki.client.certFile,
      }),
    ).toThrow(/REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE go together/);
    expect(() => redisTargetFromEnv({ REDIS_CLUSTER_NODES: 'h:1', REDIS_TLS: 'true', ...file })).toThrow(
      /REDIS_TLS_CA_FILE: cannot read \/nonexistent\/ca.crt \(ENOENT\)/,
    );
    const target = redisTargetFromEnv({
      REDIS_SENTINELS: 'h:1',
      REDIS_SENTINEL_NAME: 'm',
      REDIS_TLS: 'true',
    });
    expect(target?.tls?.minVersion).toBe('TLSv1.2');
  });
});
