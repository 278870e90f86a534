/**
 * Portico on separate hosts: network namespaces joined by veth pairs to one bridge, each host
 * with its own address: gateways, two resource services, PostgreSQL and Redis. Every hop
 * between hosts is encrypted as in production: the services speak mutual TLS only (not
 * SERVICE_PLAIN_HTTP) and Redis TLS only, with certificates made here. Limits are exact across
 * the gateway hosts, a change through one gateway is seen through the other, even when that
 * gateway's link to Redis goes silent (the staleness bound of docs/caching.md), and a gateway
 * host that loses its link takes nothing but itself out of service.
 *
 * Needs root and iproute2 (as CI runs); skipped, saying why, where namespaces cannot be made.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  appendFileSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { createTestPki, type TestPki } from '../support/internal-pki.ts';
import { createHostNetwork, namespacesUnavailable, type Host, type HostNetwork } from '../support/netns.ts';
import { lateStale, readFor, worstStaleness, type TimedRead } from './support/timed-reads.ts';
import {
  freshCustomer,
  LIMIT,
  policy,
  startScaleFixture,
  type ScaleFixture,
} from './support/scale-fixture.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
/** The newest PostgreSQL server installed the Debian way, for the database host. */
const PG_BIN = (() => {
  try {
    const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
    return versions.map((v) => `/usr/lib/postgresql/${v}/bin`).find((bin) => existsSync(`${bin}/initdb`));
  } catch {
    return undefined;
  }
})();
const unavailable =
  namespacesUnavailable() ??
  (PG_BIN === undefined ? 'no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb)' : undefined);
// Why these may be skipped: namespaces need root and iproute2, the database host PostgreSQL's
// server binaries; a developer's machine may lack them. CI runs as root with all of them
// (.ci/run installs iproute2): there a missing one fails the run instead of skipping unnoticed.
const ON_CI = process.env['CI'] === 'true';
if (unavailable !== undefined && ON_CI)
  throw new Error(`CI cannot run test/scale/namespaces.test.ts: ${unavailable}`);
if (unavailable !== undefined) console.warn(`test/scale/namespaces.test.ts skipped: ${unavailable}`);

let network: HostNetwork;
let fixture: ScaleFixture;
let dir: string;
let pki: TestPki;
const hosts: Record<'gw1' | 'gw2' | 'gw3' | 'svc1' | 'svc2' | 'pg' | 'redis', Host> = {} as never;
const children: ChildProcess[] = [];

function canConnect(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => (socket.destroy(), resolve(ok));
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(port, address, () => done(true));
  });
}

async function until(what: string, condition: () => Promise<boolean>, timeoutMs = 30_000): Promise<number> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return Date.now() - started;
}

function start(host: Host, command: string[], env: Record<string, string> = {}): ChildProcess {
  const child = host.run(command, {
    env: { PATH: process.env['PATH'], LOG_LEVEL: 'warn', ...env },
    stdio: 'ignore',
  });
  children.push(child);
  return child;
}

/** A PostgreSQL of its own on the pg host (initdb in a temporary dir, trust on this network). */
async function startPostgres(host: Host): Promise<string> {
  const data = join(dir, 'pg');
  execFileSync('mkdir', ['-p', data]);
  chownSync(data, Number(execFileSync('id', ['-u', 'postgres']).toString()), 0);
  execFileSync(
    'runuser',
    ['-u', 'postgres', '--', `${PG_BIN!}/initdb`, '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'],
    {
      stdio: 'ignore',
    },
  );
  appendFileSync(join(data, 'pg_hba.conf'), `host all all ${network.address}/24 trust\n`);
  start(host, [
    'runuser',
    '-u',
    'postgres',
    '--',
    `${PG_BIN!}/postgres`,
    '-D',
    data,
    '-c',
    `listen_addresses=${host.address}`,
    '-c',
    `unix_socket_directories=${data}`,
    '-c',
    'fsync=off',
  ]);
  await until('PostgreSQL on its host', () => canConnect(host.address, 5432));
  return `postgres://postgres@${host.address}:5432/postgres`;
}

const serviceUrl = (host: Host) => `https://${host.address}:8081`;
const gatewayAt = (host: Host) => `${host.address}:8443`;
const readyz = (host: Host) =>
  fetch(`http://${host.address}:8442/readyz`, { signal: AbortSignal.timeout(1500) }).then(
    (r) => r.status === 200,
    () => false,
  );

beforeAll(async () => {
  if (unavailable !== undefined) return;
  fixture = await startScaleFixture();
  // In /tmp itself: the test run's own temporary dir is closed to the postgres user.
  dir = mkdtempSync('/tmp/portico-hosts-');
  execFileSync('chmod', ['755', dir]);
  network = createHostNetwork();
  for (const label of ['gw1', 'gw2', 'gw3', 'svc1', 'svc2', 'pg', 'redis'] as const)
    hosts[label] = network.host(label);
  // One CA for the internal hops: the services' and Redis's server certificate (it names
  // localhost, not the hosts' addresses: the clients check that name, as REDIS_TLS_SERVERNAME and
  // proxy.upstreamTls[].serverName let operators say), and the gateways' client certificate.
  pki = await createTestPki('hosts-ca', mkdtempSync(join(dir, 'pki-')));

  const assertionKeys = `hosts:${randomBytes(32).toString('base64')}`;
  start(hosts.redis, [
    'redis-server',
    '--port',
    '0',
    '--tls-port',
    '6379',
    '--tls-cert-file',
    pki.server.certFile,
    '--tls-key-file',
    pki.server.keyFile,
    '--tls-ca-cert-file',
    pki.caFile,
    '--tls-auth-clients',
    'yes',
    '--bind',
    hosts.redis.address,
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'no',
  ]);
  const databaseUrl = await startPostgres(hosts.pg);
  // One after the other: the first applies the migrations.
  for (const label of ['svc1', 'svc2'] as const) {
    start(hosts[label], [process.execPath, join(ROOT, 'resource-service/main.ts')], {
      DATABASE_URL: databaseUrl,
      SERVICE_HOST: hosts[label].address,
      SERVICE_PORT: '8081',
      SERVICE_TLS_CERT_FILE: pki.server.certFile,
      SERVICE_TLS_KEY_FILE: pki.server.keyFile,
      SERVICE_TLS_CLIENT_CA_FILE: pki.caFile,
      PORTICO_ASSERTION_KEYS: assertionKeys,
      PORTICO_DATA_DIR: join(dir, label),
    });
    await until(`service on ${label}`, () => canConnect(hosts[label].address, 8081));
  }
  const services = [hosts.svc1, hosts.svc2].map(serviceUrl);
  const gatewayConfig = (onStoreFailure: 'deny' | 'allow') => ({
    ...fixture.config(onStoreFailure === 'deny' ? policy('deny') : readerLimits, [
      { prefix: '/v1', upstreams: services.map((url) => ({ url })), cache: true },
    ]),
    proxy: {
      upstreamTls: services.map((origin) => ({
        origin,
        caFile: pki.caFile,
        certFile: pki.client.certFile,
        keyFile: pki.client.keyFile,
        serverName: 'localhost',
      })),
    },
  });
  // gw3 admits when Redis fails (`allow`): it keeps answering while its link to Redis is cut,
  // which is what the staleness bound is about; it is read back to back, so its limit is high.
  const readerLimits = {
    ...policy('allow'),
    policies: [{ name: 'default', key: 'customer', limit: 100_000, window: '60s' }],
  };
  const configFiles = { deny: join(dir, 'gateway.json'), allow: join(dir, 'gateway-allow.json') };
  writeFileSync(configFiles.deny, JSON.stringify(gatewayConfig('deny')));
  writeFileSync(configFiles.allow, JSON.stringify(gatewayConfig('allow')));
  const redisPrefix = `hosts-${randomUUID()}:`;
  for (const label of ['gw1', 'gw2', 'gw3'] as const) {
    start(hosts[label], [process.execPath, join(ROOT, 'gateway/main.ts')], {
      PORTICO_CONFIG: label === 'gw3' ? configFiles.allow : configFiles.deny,
      GATEWAY_PORT: '8443',
      ADMIN_PORT: '8442',
      ADMIN_HOST: '0.0.0.0',
      REDIS_URL: `rediss://${hosts.redis.address}:6379`,
      REDIS_TLS_CA_FILE: pki.caFile,
      REDIS_TLS_CERT_FILE: pki.client.certFile,
      REDIS_TLS_KEY_FILE: pki.client.keyFile,
      REDIS_TLS_SERVERNAME: 'localhost',
      PORTICO_REDIS_PREFIX: redisPrefix,
      PORTICO_ASSERTION_KEYS: assertionKeys,
      PORTICO_DATA_DIR: join(dir, label),
    });
  }
  for (const label of ['gw1', 'gw2', 'gw3'] as const)
    await until(`gateway on ${label} ready`, () => readyz(hosts[label]));
}, 90_000);

afterAll(async () => {
  if (unavailable !== undefined) return;
  network?.close(); // kills every process inside the hosts
  await fixture?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

async function createOrder(at: string, authorization: string): Promise<string> {
  const created = await fixture.call(at, authorization, '/v1/orders', 'POST', {
    body: '{"items":[{"sku":"SKU-1","quantity":2,"unit_price":1250}],"currency":"EUR"}',
  });
  expect(created.status).toBe(201);
  return (JSON.parse(created.body) as { id: string }).id;
}

describe.skipIf(unavailable !== undefined)(
  `on separate hosts (network namespaces)${unavailable === undefined ? '' : ` — skipped: ${unavailable}`}`,
  () => {
    it('two gateway hosts admit exactly the limit, counted in Redis on its own host', async () => {
      const auth = `Bearer ${await fixture.token(freshCustomer())}`;
      const statuses = await Promise.all(
        Array.from({ length: LIMIT + 10 }, (_, i) =>
          fixture.call(gatewayAt(i % 2 === 0 ? hosts.gw1 : hosts.gw2), auth).then((r) => r.status),
        ),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
      expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    });

    it('a change through one gateway host is seen at once through the other', async () => {
      const auth = `Bearer ${await fixture.token(freshCustomer())}`;
      const id = await createOrder(gatewayAt(hosts.gw1), auth);
      const path = `/v1/orders/${id}`;
      await fixture.call(gatewayAt(hosts.gw2), auth, path);
      expect(String((await fixture.call(gatewayAt(hosts.gw2), auth, path)).headers['cache-status'])).toMatch(
        /^Portico; hit/,
      );
      const patched = await fixture.call(gatewayAt(hosts.gw1), auth, path, 'PATCH', {
        body: '{"status":"cancelled"}',
      });
      expect(patched.status).toBe(200);
      const read = await fixture.call(gatewayAt(hosts.gw2), auth, path);
      expect((JSON.parse(read.body) as { status: string }).status).toBe('cancelled');
    });

    it('a gateway host that loses its link drops out alone', async () => {
      hosts.gw1.unplug();
      try {
        await expect(
          fixture.call(gatewayAt(hosts.gw1), 'Bearer x', '/v1/orders', 'GET', { timeoutMs: 1000 }),
        ).rejects.toThrow();
        // Everything else serves: the other gateway, both services behind it, PostgreSQL, Redis.
        expect(await readyz(hosts.gw2)).toBe(true);
        const auth = `Bearer ${await fixture.token(freshCustomer())}`;
        const id = await createOrder(gatewayAt(hosts.gw2), auth);
        expect((await fixture.call(gatewayAt(hosts.gw2), auth, `/v1/orders/${id}`)).status).toBe(200);
        const statuses = [];
        for (let i = 0; i < LIMIT; i++)
          statuses.push((await fixture.call(gatewayAt(hosts.gw2), auth)).status);
        // Two requests were counted already (the POST and the GET): the limit holds exactly.
        expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT - 2);
      } finally {
        hosts.gw1.plug();
      }
      const back = await until('gw1 ready after its link is back', () => readyz(hosts.gw1));
      expect(back).toBeLessThan(30_000);
      const auth = `Bearer ${await fixture.token(freshCustomer())}`;
      expect((await fixture.call(gatewayAt(hosts.gw1), auth)).status).toBe(200);
    });

    it('the services on their hosts speak mutual TLS only: a stranger without the gateway certificate is refused', async () => {
      const url = `${serviceUrl(hosts.svc1)}/v1/orders`;
      const connect = { ca: pki.ca.cert, servername: 'localhost' };
      const asGateway = new Agent({ connect: { ...connect, cert: pki.client.cert, key: pki.client.key } });
      const stranger = new Agent({ connect });
      try {
        // The gateway's certificate passes the handshake; the service then wants its signed assertion.
        expect((await request(url, { dispatcher: asGateway })).statusCode).toBe(401);
        await expect(request(url, { dispatcher: stranger }).then((r) => r.body.text())).rejects.toThrow();
        await expect(
          fetch(`http://${hosts.svc1.address}:8081/v1/orders`, { signal: AbortSignal.timeout(3000) }),
        ).rejects.toThrow();
      } finally {
        await Promise.all([asGateway.close(), stranger.close()]);
      }
    });

    it('a gateway whose link to Redis is blackholed serves no answer older than a write elsewhere beyond 2 s', async () => {
      const BOUND_MS = 2000;
      const auth = `Bearer ${await fixture.token(freshCustomer())}`;
      const id = await createOrder(gatewayAt(hosts.gw2), auth);
      const path = `/v1/orders/${id}`;
      const version = async () => {
        const reply = await fixture.call(gatewayAt(hosts.gw3), auth, path);
        expect(reply.status).toBe(200);
        const order = JSON.parse(reply.body) as { status: string; items: { quantity: number }[] };
        return order.status === 'cancelled' ? 2 : order.items[0]?.quantity === 3 ? 1 : 0;
      };
      await version();
      expect(String((await fixture.call(gatewayAt(hosts.gw3), auth, path)).headers['cache-status'])).toMatch(
        /^Portico; hit/,
      );
      // Redis's host drops whatever it sends to gw3: no FIN, no RST, no ICMP reaches gw3.
      const route = (action: 'add' | 'del') =>
        execFileSync('ip', [
          'netns',
          'exec',
          hosts.redis.name,
          'ip',
          'route',
          action,
          'blackhole',
          `${hosts.gw3.address}/32`,
        ]);
      const reads: TimedRead[] = [];
      const writes: number[] = [];
      const write = async (body: string) => {
        const reply = await fixture.call(gatewayAt(hosts.gw2), auth, path, 'PATCH', { body });
        expect(reply.status).toBe(200);
        writes.push(performance.now());
      };
      route('add');
      try {
        await write('{"items":[{"sku":"SKU-1","quantity":3,"unit_price":1250}]}');
        await readFor(1000, version, reads);
        await write('{"status":"cancelled"}');
        await readFor(BOUND_MS + 1500, version, reads);
      } finally {
        route('del');
      }
      await readFor(4000, version, reads);
      expect(lateStale(reads, writes, BOUND_MS)).toEqual([]);
      console.info(
        `blackholed gateway↔Redis link: a write went unseen for at most ${worstStaleness(reads, writes)} ms (bound ${BOUND_MS} ms)`,
      );
      // Healed, gw3 hears invalidations again and so caches again.
      await until('gw3 caching again after the heal', async () => {
        await fixture.call(gatewayAt(hosts.gw3), auth, path);
        return /^Portico; hit/.test(
          String((await fixture.call(gatewayAt(hosts.gw3), auth, path)).headers['cache-status']),
        );
      });
    }, 60_000);
  },
);
