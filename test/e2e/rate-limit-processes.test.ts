/**
 * Rate limits as operators run them: gateway processes (`node gateway/main.ts`) sharing one
 * Redis, a config file edited while traffic flows, and a Redis of our own stopped and frozen
 * under a running gateway.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startGatewayProcess } from '../gateway/support/gateway-process.ts';
import type { GatewayProcess } from '../gateway/support/gateway-process.ts';
import { startRecordingUpstream } from '../gateway/support/harness.ts';
import type { RecordingUpstream } from '../gateway/support/harness.ts';
import { startOwnRedis } from '../support/redis-server.ts';
import { createTestCertificate } from '../support/tls.ts';
import type { TestCertificate } from '../support/tls.ts';

const ISSUER = 'https://issuer.portico.test';
const AUDIENCE = 'portico-test';
let signToken: (customerId: string) => Promise<string>;
let jwksFile: string;
let certificate: TestCertificate;
let upstream: RecordingUpstream;
let agent: Agent;
const processes: GatewayProcess[] = [];

beforeAll(async () => {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const kid = randomUUID();
  const dir = mkdtempSync(join(tmpdir(), 'portico-rl-'));
  jwksFile = join(dir, 'jwks.json');
  writeFileSync(
    jwksFile,
    JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' }] }),
  );
  signToken = (customerId) =>
    new SignJWT({ customer_id: customerId, scope: 'orders:read', client_id: 'rl' })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(`user-${customerId}`)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
  certificate = await createTestCertificate();
  upstream = await startRecordingUpstream();
  agent = new Agent({ connect: { ca: certificate.cert, servername: 'localhost' }, connections: 64 });
});
afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  await upstream.close();
  await agent.close();
});

function gatewayConfig(rateLimits: Record<string, unknown>) {
  return {
    listener: { tls: { certFile: certificate.certFile, keyFile: certificate.keyFile } },
    routes: [{ prefix: '/v1', upstream: upstream.url }],
    auth: { jwt: { jwksFile, issuer: ISSUER, audience: AUDIENCE } },
    rateLimits,
  };
}

async function gateway(rateLimits: Record<string, unknown>, env: Record<string, string> = {}) {
  const process = await startGatewayProcess(gatewayConfig(rateLimits), env);
  processes.push(process);
  return process;
}

async function get(port: number, token: string, path = '/v1/orders') {
  const response = await request(`https://localhost:${port}${path}`, {
    headers: { authorization: `Bearer ${token}` },
    dispatcher: agent,
  });
  await response.body.text();
  return { status: response.statusCode, headers: response.headers };
}

describe('rate limits across gateway processes', () => {
  it('two gateways sharing one Redis with limit 100 admit exactly 100 of 400 requests', async () => {
    const env = {
      REDIS_URL: inject('redisUrl'),
      PORTICO_REDIS_PREFIX: `${inject('redisPrefix')}${randomUUID()}:`,
    };
    // 400 requests and 128 TLS handshakes at once saturate both cores; with the default 50 ms
    // store timeout some Redis answers would arrive "late" and fall back to memory limits.
    // Exactness across replicas is the point here, so the store gets time to answer.
    const policy = {
      storeTimeoutMs: 2000,
      policies: [{ name: 'default', key: 'customer', limit: 100, window: '60s' }],
    };
    const [a, b] = await Promise.all([gateway(policy, env), gateway(policy, env)]);
    const token = await signToken(`cus_${randomBytes(4).toString('hex')}`);
    const statuses = await Promise.all(
      Array.from({ length: 400 }, (_, i) => get((i % 2 === 0 ? a : b).port, token).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(statuses.filter((s) => s === 429)).toHaveLength(300);
    const [first, second] = [statuses.filter((_, i) => i % 2 === 0), statuses.filter((_, i) => i % 2 === 1)];
    expect(first.includes(429) && second.includes(429)).toBe(true);
  });

  it('a config edit under load changes the limit within 2 s, with zero failed requests', async () => {
    const initial = { policies: [{ name: 'default', key: 'customer', limit: 100_000, window: '60s' }] };
    const gw = await gateway(initial);
    const token = await signToken(`cus_${randomBytes(4).toString('hex')}`);
    const statuses: number[] = [];
    const errors: unknown[] = [];
    let running = true;
    const load = Promise.all(
      Array.from({ length: 8 }, async () => {
        while (running) {
          try {
            statuses.push((await get(gw.port, token)).status);
          } catch (error) {
            errors.push(error);
          }
        }
      }),
    );
    await new Promise((r) => setTimeout(r, 300));
    const editedAt = Date.now();
    writeFileSync(
      gw.configFile,
      JSON.stringify(
        gatewayConfig({ policies: [{ name: 'default', key: 'customer', limit: 50, window: '60s' }] }),
      ),
    );
    let limitedAt: number | undefined;
    while (Date.now() - editedAt < 5000 && limitedAt === undefined) {
      if (statuses.includes(429)) limitedAt = Date.now();
      await new Promise((r) => setTimeout(r, 20));
    }
    running = false;
    await load;
    expect(errors).toEqual([]);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    expect(limitedAt).toBeDefined();
    expect((limitedAt ?? Infinity) - editedAt).toBeLessThan(2000);
    await gw.waitForLog('config reloaded');
  });

  it('an invalid edit keeps the running limits and logs each problem by its path', async () => {
    const gw = await gateway({ policies: [{ name: 'default', key: 'customer', limit: 3, window: '60s' }] });
    writeFileSync(
      gw.configFile,
      JSON.stringify(
        gatewayConfig({ policies: [{ name: 'default', key: 'nobody', limit: -1, window: '60s' }] }),
      ),
    );
    gw.child.kill('SIGHUP');
    const refused = await gw.waitForLog('config reload refused; keeping the running config');
    expect(refused['problems']).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^rateLimits\.policies\[0\]\.key: must be one of/),
        expect.stringMatching(/^rateLimits\.policies\[0\]\.limit:/),
      ]),
    );
    const token = await signToken(`cus_${randomBytes(4).toString('hex')}`);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(gw.port, token)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});

describe('Redis failing under a running gateway', () => {
  for (const mode of ['memory', 'allow', 'deny'] as const) {
    it(`onStoreFailure: ${mode}: stopped, then frozen, then back`, async () => {
      const redis = await startOwnRedis();
      try {
        const gw = await gateway(
          { onStoreFailure: mode, policies: [{ name: 'default', key: 'customer', limit: 3, window: '60s' }] },
          { REDIS_URL: redis.url },
        );
        const admin = `http://127.0.0.1:${gw.adminPort}`;
        const fresh = async () => signToken(`cus_${randomBytes(4).toString('hex')}`);
        // Healthy: counted in Redis.
        expect((await get(gw.port, await fresh())).status).toBe(200);
        expect((await fetch(`${admin}/readyz`)).status).toBe(200);

        for (const outage of ['stopped', 'frozen'] as const) {
          if (outage === 'stopped') await redis.stop();
          else {
            await redis.start();
            await new Promise((r) => setTimeout(r, 2500)); // the client reconnects (retry ≤ 2 s)
            redis.freeze();
          }
          const token = await fresh();
          const started = performance.now();
          const statuses = [];
          for (let i = 0; i < 4; i++) statuses.push((await get(gw.port, token)).status);
          const perRequestMs = (performance.now() - started) / 4;
          if (mode === 'memory') expect(statuses, outage).toEqual([200, 200, 200, 429]);
          if (mode === 'allow') expect(statuses, outage).toEqual([200, 200, 200, 200]);
          if (mode === 'deny') expect(statuses, outage).toEqual([503, 503, 503, 503]);
          // Bounded by the command timeout, not by TCP: generous for a loaded machine.
          expect(perRequestMs, outage).toBeLessThan(500);
          // Readiness means "can serve" (docs/operations.md): under memory and allow the gateway
          // still serves, so it stays Ready and says it is degraded; under deny it serves only
          // 503s, and another gateway would do better.
          const readiness = await fetch(`${admin}/readyz`);
          const report = (await readiness.json()) as { status: string };
          if (mode === 'deny') expect([readiness.status, report.status], outage).toEqual([503, 'not ready']);
          else expect([readiness.status, report.status], outage).toEqual([200, 'degraded']);
          const metrics = await (await fetch(`${admin}/metrics`)).text();
          expect(metrics, outage).toMatch(/^portico_ratelimit_store_degraded 1$/m);
        }

        redis.thaw();
        // Back by itself: a fresh customer is counted in Redis again (limit 3, 4th refused in every mode).
        const token = await fresh();
        let statuses: number[] = [];
        for (let attempt = 0; attempt < 40; attempt++) {
          await new Promise((r) => setTimeout(r, 250));
          const report = (await (await fetch(`${admin}/readyz`)).json()) as { status: string };
          if (report.status === 'ready') break;
        }
        statuses = [];
        for (let i = 0; i < 4; i++) statuses.push((await get(gw.port, token)).status);
        expect(statuses).toEqual([200, 200, 200, 429]);
        const after = await fetch(`${admin}/readyz`);
        expect([after.status, ((await after.json()) as { status: string }).status]).toEqual([200, 'ready']);
      } finally {
        await redis.stop();
      }
    });
  }
});
