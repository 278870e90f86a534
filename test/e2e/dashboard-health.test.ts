/**
 * The dashboard's health rows against the real things: Redis, the identity provider's keys
 * (the development issuer's JWKS) and PostgreSQL through the service's own `/healthz`, with a
 * real caller refused by a real limit counted in Redis, and no token anywhere in the snapshot.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRedisClient, waitForRedis } from '../../shared/redis.ts';
import { startPortico, type Portico } from './support/portico.ts';

let redis: ReturnType<typeof createRedisClient>;
let portico: Portico;

beforeAll(async () => {
  redis = createRedisClient({
    url: inject('redisUrl'),
    keyPrefix: `${inject('redisPrefix')}dashboard-${randomBytes(4).toString('hex')}:`,
  });
  expect(await waitForRedis(redis, 5000)).toBe(true);
  portico = await startPortico({
    redis,
    config: {
      rateLimits: {
        storeTimeoutMs: 2000,
        policies: [{ name: 'tight', key: 'customer', limit: 1, window: '60s' }],
      },
    },
  });
});
afterAll(async () => {
  await portico?.close();
  redis?.disconnect();
});

describe('dashboard health and limits against Redis, PostgreSQL and the issuer', () => {
  it('shows each dependency healthy and the customer refused, without its token', async () => {
    const token = await portico.token('cus_dash');
    expect((await portico.call('GET', '/v1/users/me', { token })).status).toBe(200);
    expect((await portico.call('GET', '/v1/users/me', { token })).status).toBe(429);

    const admin = `http://127.0.0.1:${portico.gateway.addresses.admin.port}`;
    const response = await fetch(`${admin}/dashboard.json`);
    expect(response.status).toBe(200);
    const text = await response.text();
    const snapshot = JSON.parse(text);
    const health = Object.fromEntries(snapshot.health.map((c: any) => [c.name, c]));
    expect(health['redis']).toMatchObject({ ok: true });
    expect(health['identity provider keys']).toMatchObject({ ok: true });
    // The service answers /healthz after a query to PostgreSQL.
    expect(health[`${portico.service.url}/healthz`]).toEqual({
      name: `${portico.service.url}/healthz`,
      ok: true,
      detail: 'HTTP 200',
    });
    expect(snapshot.rateLimit).toMatchObject({ backend: 'redis', degraded: false });
    expect(snapshot.rateLimit.mostLimited).toEqual([
      { principal: 'jwt:user-of-cus_dash', customerId: 'cus_dash', refused: 1, error: 0 },
    ]);
    expect(snapshot.ready).toBe(true);
    expect(text).not.toContain(token);
    expect(text).not.toContain(token.split('.')[2]);
  });
});
