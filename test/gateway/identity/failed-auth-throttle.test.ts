/**
 * The failed-authentication throttle, attacked from outside (issue 12, items 4 and 5): through
 * real HTTPS, with real signed tokens, counted in a real Redis.
 *
 * - Every credential that is not already known good is counted against its address before it
 *   is verified, atomically: concurrent guesses cannot all be verified before the first is
 *   counted.
 * - A credential already known good (verified before, still valid) is never locked out by
 *   guesses others make from its address (a NAT, an office, a load balancer).
 * - Over the limit, a new credential is still verified within the address's budget of new
 *   credentials (`newCredentials`), so a new valid token gets in; a guess that failed from
 *   there is refused unverified (issue 34 item 6). `newCredentials: 0` is the strict mode.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { loadOrCreateDevIssuer } from '../../../gateway/identity/dev-issuer.ts';
import { startPortico, type Portico } from '../../e2e/support/portico.ts';
import { redisOnOwnKeys } from '../../support/own-redis-keys.ts';

const customer = (name: string) => `${name}_${randomBytes(4).toString('hex')}`;

const clients: Redis[] = [];
/** The attacker's key: its tokens name the trusted issuer's key id, so each is really verified. */
const attackerKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;

afterAll(async () => {
  for (const client of clients) await client.quit();
});

/** A well-formed ES256 access token for the portico's issuer and key id, signed by another key. */
function forgedToken(portico: Portico, index: number): Promise<string> {
  const issuer = loadOrCreateDevIssuer(portico.dataDir);
  const kid = issuer.jwks.keys[0]?.kid;
  return new SignJWT({ client_id: 'attacker', customer_id: customer('victim'), scope: 'orders:read' })
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', ...(kid === undefined ? {} : { kid }) })
    .setIssuer(issuer.issuer)
    .setAudience(issuer.audience)
    .setSubject(`guess-${index}`)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(attackerKey);
}

/** A portico of its own, on Redis keys of its own: every request comes from 127.0.0.1. */
async function withPortico(
  limit: number,
  run: (portico: Portico) => Promise<void>,
  newCredentials?: number,
): Promise<void> {
  // Exactness is the point here (own-redis-keys.ts says why).
  const redis = await redisOnOwnKeys();
  clients.push(redis);
  const portico = await startPortico({
    redis,
    config: {
      rateLimits: {
        authFailures: { limit, window: '60s', ...(newCredentials === undefined ? {} : { newCredentials }) },
      },
    },
  });
  try {
    await run(portico);
  } finally {
    await portico.close();
  }
}

/** 60 forged tokens, each a new credential, sent at once. */
async function sixtyConcurrentGuesses(portico: Parameters<typeof forgedToken>[0]) {
  const tokens = await Promise.all(Array.from({ length: 60 }, (_, i) => forgedToken(portico, i)));
  return Promise.all(tokens.map((token) => portico.call('GET', '/v1/orders', { token })));
}

describe('failed-authentication throttle', () => {
  it('counts guesses atomically before verifying them: 60 concurrent bad tokens, limit 20 → 20 verified', async () => {
    await withPortico(
      20,
      async (portico) => {
        const replies = await sixtyConcurrentGuesses(portico);
        const statuses = replies.map((reply) => reply.status);
        expect(statuses.filter((status) => status === 401)).toHaveLength(20);
        expect(statuses.filter((status) => status === 429)).toHaveLength(40);
        for (const reply of replies.filter((r) => r.status === 429))
          expect(Number(reply.headers['retry-after'])).toBeGreaterThan(0);
      },
      0,
    );
  });

  it('counts new credentials over the limit atomically too: limit 20, 10 new → 30 of 60 verified', async () => {
    await withPortico(
      20,
      async (portico) => {
        const replies = await sixtyConcurrentGuesses(portico);
        const statuses = replies.map((reply) => reply.status);
        expect(statuses.filter((status) => status === 401)).toHaveLength(30);
        expect(statuses.filter((status) => status === 429)).toHaveLength(30);
      },
      10,
    );
  });

  it('lets a new valid token in from an address over the limit; a guess that failed stays out', async () => {
    await withPortico(3, async (portico) => {
      const guesses = await Promise.all(Array.from({ length: 4 }, (_, i) => forgedToken(portico, i)));
      const statuses = [];
      for (const token of guesses) statuses.push((await portico.call('GET', '/v1/orders', { token })).status);
      // The fourth is over the limit, but never seen failing here: verified (and refused).
      expect(statuses).toEqual([401, 401, 401, 401]);
      // The same guess again is refused without being verified.
      const again = await portico.call('GET', '/v1/orders', { token: guesses[3]! });
      expect(again.status).toBe(429);
      // A new user behind the same address, with a token of their own: served.
      const fresh = await portico.call('GET', '/v1/orders', { token: await portico.token(customer('new')) });
      expect(fresh.status).toBe(200);
    });
  });

  it('never locks out a credential already known good, while new credentials wait (newCredentials: 0)', async () => {
    await withPortico(
      3,
      async (portico) => {
        const known = await portico.token(customer('office-worker'));
        expect((await portico.call('GET', '/v1/orders', { token: known })).status).toBe(200);

        const statuses = [];
        for (let i = 0; i < 5; i++)
          statuses.push(
            (await portico.call('GET', '/v1/orders', { token: await forgedToken(portico, i) })).status,
          );
        expect(statuses).toEqual([401, 401, 401, 429, 429]);

        // Same address, same (already verified) token: still served.
        expect((await portico.call('GET', '/v1/orders', { token: known })).status).toBe(200);
        // A credential never seen before from that address is not verified until the window ends.
        const fresh = await portico.call('GET', '/v1/orders', {
          token: await portico.token(customer('new')),
        });
        expect(fresh.status).toBe(429);
      },
      0,
    );
  });

  it('gives back the count of a credential that verifies: good logins never add up to a lockout', async () => {
    await withPortico(
      3,
      async (portico) => {
        for (let i = 0; i < 6; i++) {
          const token = await portico.token(customer(`login-${i}`));
          expect((await portico.call('GET', '/v1/orders', { token })).status).toBe(200);
        }
        const statuses = [];
        for (let i = 0; i < 4; i++)
          statuses.push(
            (await portico.call('GET', '/v1/orders', { token: await forgedToken(portico, i) })).status,
          );
        expect(statuses).toEqual([401, 401, 401, 429]);
      },
      0,
    );
  });

  it('counts a new credential sent on many connections at once as one attempt, and lets it in', async () => {
    await withPortico(
      3,
      async (portico) => {
        // A client with 32 connections open (warmed without credentials, which count nothing)
        // sends a token it has just obtained on all of them at once.
        const warm = await Promise.all(Array.from({ length: 32 }, () => portico.call('GET', '/v1/orders')));
        expect(warm.every((reply) => reply.status === 401)).toBe(true);
        const token = await portico.token(customer('fresh-start'));
        const replies = await Promise.all(
          Array.from({ length: 32 }, () => portico.call('GET', '/v1/orders', { token })),
        );
        expect(replies.map((reply) => reply.status)).toEqual(Array.from({ length: 32 }, () => 200));
        // Nothing of it stayed counted: the address still has its three guesses.
        const statuses = [];
        for (let i = 0; i < 4; i++)
          statuses.push(
            (await portico.call('GET', '/v1/orders', { token: await forgedToken(portico, i) })).status,
          );
        expect(statuses).toEqual([401, 401, 401, 429]);
      },
      0,
    );
  });
});
