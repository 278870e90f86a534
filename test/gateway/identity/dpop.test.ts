/**
 * DPoP (RFC 9449), end to end and from the attacker's side: oidc-provider in its own process
 * issues DPoP-bound access tokens (`cnf.jkt`) to a client that proves its key with real proofs
 * (jose), and two gateway replicas sharing one Redis, behind one public name (a trusted load
 * balancer's `X-Forwarded-Host`), accept each proof once, for its method and URI and token,
 * signed by the key the token is bound to, and only while fresh.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { decodeJwt, SignJWT } from 'jose';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRedisClient, waitForRedis } from '../../../shared/redis.ts';
import { IDENTITY_HEADER, verifyAssertion, type AssertionKey } from '../../../shared/identity-assertion.ts';
import {
  auditRecordOf,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';
import { DpopNonces } from '../../../gateway/identity/sender-constraint/dpop-nonce.ts';
import { AUDIENCE, createDpopKey, dpopBoundToken, dpopProof, type DpopKey } from './support/dpop-client.ts';
import { startExternalIdp, type ExternalIdp } from './support/external-idp.ts';

/** The name clients use; the load balancer in front of both replicas says so. */
const PUBLIC_HOST = 'api.portico.test';
const PUBLIC = `https://${PUBLIC_HOST}`;
const assertionKeys: AssertionKey[] = [{ kid: 'dpop-test', secret: randomBytes(32) }];

let idp: ExternalIdp;
let upstream: RecordingUpstream;
let redis: Redis;
const replicas: TestGateway[] = [];
const dirs: string[] = [];
let key: DpopKey;
let token: string;

async function startReplica(extra: Record<string, unknown> = {}, client = redis): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'portico-dpop-'));
  dirs.push(dataDir);
  const gateway = await startTestGateway(
    upstream.url,
    {
      routes: [
        { prefix: '/v1', upstream: upstream.url, auth: 'required' },
        {
          prefix: '/v1/dpop-only',
          upstream: upstream.url,
          auth: 'required',
          tokenBinding: { require: 'dpop' },
        },
        {
          prefix: '/v1/nonce',
          upstream: upstream.url,
          auth: 'required',
          tokenBinding: { require: 'dpop', dpopNonce: true },
        },
      ],
      auth: { jwt: { issuer: idp.issuer, audience: AUDIENCE, jwksUrl: `${idp.issuer}/jwks` } },
      // The test client stands for the load balancer: its forwarded host is believed.
      proxy: { trustProxy: ['127.0.0.1', '::1'] },
      ...extra,
    },
    { redis: client, dataDir, assertionKeys, auditLogPath: join(dataDir, 'audit.log') },
  );
  replicas.push(gateway);
  return gateway;
}

function newRedis(): Redis {
  return createRedisClient({
    url: inject('redisUrl'),
    keyPrefix: `${inject('redisPrefix')}${randomUUID()}:`,
    commandTimeoutMs: 2000,
  });
}

beforeAll(async () => {
  idp = await startExternalIdp();
  upstream = await startRecordingUpstream();
  redis = newRedis();
  expect(await waitForRedis(redis)).toBe(true);
  await startReplica();
  await startReplica();
  key = await createDpopKey();
  ({ token } = await dpopBoundToken(idp, 'client-plain', key));
}, 60_000);

afterAll(async () => {
  for (const gateway of replicas) await gateway.close();
  await upstream?.close();
  await idp?.stop();
  await redis?.quit();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Call {
  method?: 'GET' | 'POST' | 'DELETE';
  path?: string;
  authorization?: string;
  dpop?: string | string[];
  replica?: TestGateway;
}

/** A request through one replica as the load balancer forwards it: the public host named. */
async function call({
  method = 'GET',
  path = '/v1/orders',
  authorization,
  dpop,
  replica = replicas[0]!,
}: Call) {
  const headers: Record<string, string | string[]> = {
    'x-forwarded-host': PUBLIC_HOST,
    'x-forwarded-proto': 'https',
  };
  if (authorization !== undefined) headers['authorization'] = authorization;
  if (dpop !== undefined) headers['dpop'] = dpop;
  const response = await request(`${replica.origin}${path}`, { method, headers, dispatcher: replica.agent });
  const text = await response.body.text();
  return {
    status: response.statusCode,
    headers: response.headers,
    body: text === '' ? {} : JSON.parse(text),
  };
}

const proofFor = (
  method: string,
  path: string,
  claims: Partial<Parameters<typeof dpopProof>[1]> = {},
  signer = key,
) => dpopProof(signer, { htm: method, htu: `${PUBLIC}${path}`, accessToken: token, ...claims });

describe('DPoP-bound tokens from an outside identity provider', () => {
  it('the provider binds the token to the proof key (token_type DPoP, cnf.jkt)', async () => {
    const fresh = await dpopBoundToken(idp, 'client-plain', key);
    expect(fresh.type).toBe('DPoP');
    expect(decodeJwt(fresh.token)['cnf']).toEqual({ jkt: key.jkt });
  });

  it('accepts the token with a fresh proof, and asserts the binding upstream and in the audit', async () => {
    const before = upstream.records.length;
    const reply = await call({ authorization: `DPoP ${token}`, dpop: await proofFor('GET', '/v1/orders') });
    expect(reply.status).toBe(200);
    const record = upstream.records[before]!;
    const assertion = verifyAssertion(assertionKeys, record.headers[IDENTITY_HEADER] as string, {
      method: 'GET',
      target: '/v1/orders',
    });
    expect(assertion).toMatchObject({
      ok: true,
      principal: { customerId: 'cust-plain', cnf: { jkt: key.jkt } },
    });
    // The proof never goes further than the edge.
    expect(record.headers['dpop']).toBeUndefined();
    const requestId = reply.headers['x-request-id'] as string;
    const audit = await auditRecordOf(join(dirs[0]!, 'audit.log'), requestId);
    expect(audit['auth']).toEqual({ outcome: 'ok', binding: { method: 'dpop', jkt: key.jkt } });
  });

  it('normalises htu as RFC 9449 says: case of scheme and host, default port, query left out', async () => {
    const proof = await dpopProof(key, {
      htm: 'GET',
      htu: 'HTTPS://API.Portico.TEST:443/v1/orders',
      accessToken: token,
    });
    expect(
      (await call({ path: '/v1/orders?limit=5', authorization: `DPoP ${token}`, dpop: proof })).status,
    ).toBe(200);
  });

  it('refuses a proof replayed at another replica (one Redis): invalid_dpop_proof', async () => {
    const proof = await proofFor('GET', '/v1/orders');
    expect((await call({ authorization: `DPoP ${token}`, dpop: proof, replica: replicas[0]! })).status).toBe(
      200,
    );
    const replayed = await call({ authorization: `DPoP ${token}`, dpop: proof, replica: replicas[1]! });
    expect(replayed.status).toBe(401);
    expect(replayed.body).toMatchObject({ code: 'ERR_INVALID_DPOP_PROOF' });
    expect(replayed.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(replayed.headers['www-authenticate']).toMatch(/^DPoP .*error="invalid_dpop_proof"/);
    expect(replayed.headers['www-authenticate']).toContain('algs="ES256 EdDSA PS256 RS256"');
    expect(replayed.body.detail).toContain('already used');
  });

  it('refuses a proof for another method, another URI, or another access token', async () => {
    const cases = [
      await proofFor('POST', '/v1/orders'),
      await proofFor('GET', '/v1/invoices'),
      await dpopProof(key, { htm: 'GET', htu: `https://elsewhere.test/v1/orders`, accessToken: token }),
      await proofFor('GET', '/v1/orders', { accessToken: `${token}x` }),
    ];
    for (const proof of cases) {
      const reply = await call({ authorization: `DPoP ${token}`, dpop: proof });
      expect(reply.status).toBe(401);
      expect(reply.body).toMatchObject({ code: 'ERR_INVALID_DPOP_PROOF' });
    }
  });

  it("refuses a proof from another replica's host when the forwarded host comes from no trusted proxy", async () => {
    const untrusted = await startReplica({ proxy: { trustProxy: false } });
    const reply = await call({
      authorization: `DPoP ${token}`,
      dpop: await proofFor('GET', '/v1/orders'),
      replica: untrusted,
    });
    expect(reply.status).toBe(401);
    expect(reply.body.detail).toContain('another URI');
  });

  it('refuses a proof signed by another key than its jwk, and a token bound to another key', async () => {
    const other = await createDpopKey();
    // The header names the token's key, the signature is another's.
    const forged = await new SignJWT({
      htm: 'GET',
      htu: `${PUBLIC}/v1/orders`,
      jti: randomUUID(),
      ath: (await proofClaims()).ath,
    })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
      .setIssuedAt()
      .sign(other.privateKey);
    const signature = await call({ authorization: `DPoP ${token}`, dpop: forged });
    expect(signature.status).toBe(401);
    expect(signature.body.detail).toContain('signature');
    // A true proof of another key: the token is not bound to it.
    const otherKey = await call({
      authorization: `DPoP ${token}`,
      dpop: await proofFor('GET', '/v1/orders', {}, other),
    });
    expect(otherKey.status).toBe(401);
    expect(otherKey.body.detail).toContain("not the token's key");
  });

  it('refuses a stale proof, and one from the future', async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const iat of [now - 120, now + 60]) {
      const reply = await call({
        authorization: `DPoP ${token}`,
        dpop: await proofFor('GET', '/v1/orders', { iat }),
      });
      expect(reply.status).toBe(401);
      expect(reply.body).toMatchObject({ code: 'ERR_INVALID_DPOP_PROOF' });
    }
  });

  it('refuses a proof of a symmetric or private key, of a wrong typ, or two proofs at once', async () => {
    const typ = await proofFor('GET', '/v1/orders', {}, key).then(() =>
      dpopProof(key, { htm: 'GET', htu: `${PUBLIC}/v1/orders`, accessToken: token }, { typ: 'JWT' }),
    );
    const privateJwk = await dpopProof(
      key,
      { htm: 'GET', htu: `${PUBLIC}/v1/orders`, accessToken: token },
      { jwk: { ...key.jwk, d: 'AAAA' } },
    );
    for (const dpop of [
      typ,
      privateJwk,
      [await proofFor('GET', '/v1/orders'), await proofFor('GET', '/v1/orders')],
    ]) {
      const reply = await call({ authorization: `DPoP ${token}`, dpop });
      expect(reply.status).toBe(401);
      expect(reply.body).toMatchObject({ code: 'ERR_INVALID_DPOP_PROOF' });
    }
    expect((await call({ authorization: `DPoP ${token}` })).body.detail).toContain('missing DPoP proof');
  });

  it('refuses the DPoP-bound token sent as a Bearer token, though it verified before', async () => {
    const reply = await call({ authorization: `Bearer ${token}` });
    expect(reply.status).toBe(401);
    expect(reply.body).toMatchObject({ code: 'ERR_INVALID_TOKEN' });
    expect(reply.headers['www-authenticate']).toMatch(/^DPoP .*error="invalid_token"/);
    expect(reply.body.detail).toContain('sent as Bearer');
  });

  it('a route that requires DPoP refuses a bearer token and challenges for DPoP without one', async () => {
    const bearerToken = await idp.token('client-plain');
    const bearer = await call({ path: '/v1/dpop-only/x', authorization: `Bearer ${bearerToken}` });
    expect(bearer.status).toBe(401);
    expect(bearer.body.detail).toContain('requires a DPoP-bound token');
    const none = await call({ path: '/v1/dpop-only/x' });
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^DPoP realm="portico", algs="/);
    // A bearer token is still good where DPoP is not required.
    expect((await call({ authorization: `Bearer ${bearerToken}` })).status).toBe(200);
    // And a token that is not DPoP-bound cannot be sent with the DPoP scheme.
    const notBound = await call({
      authorization: `DPoP ${bearerToken}`,
      dpop: await dpopProof(key, { htm: 'GET', htu: `${PUBLIC}/v1/orders`, accessToken: bearerToken }),
    });
    expect(notBound.status).toBe(401);
    expect(notBound.body.detail).toContain('not DPoP-bound');
  });

  it('server nonces: use_dpop_nonce with a DPoP-Nonce, which then works at every replica', async () => {
    const first = await call({
      path: '/v1/nonce/a',
      authorization: `DPoP ${token}`,
      dpop: await proofFor('GET', '/v1/nonce/a'),
    });
    expect(first.status).toBe(401);
    expect(first.body).toMatchObject({ code: 'ERR_USE_DPOP_NONCE' });
    expect(first.headers['www-authenticate']).toMatch(/error="use_dpop_nonce"/);
    const nonce = first.headers['dpop-nonce'] as string;
    expect(nonce).toMatch(/\S{20,}/);
    for (const replica of replicas.slice(0, 2)) {
      const reply = await call({
        path: '/v1/nonce/a',
        authorization: `DPoP ${token}`,
        dpop: await proofFor('GET', '/v1/nonce/a', { nonce }),
        replica,
      });
      expect(reply.status).toBe(200);
    }
    const forged = await call({
      path: '/v1/nonce/a',
      authorization: `DPoP ${token}`,
      dpop: await proofFor('GET', '/v1/nonce/a', { nonce: `${nonce.slice(0, -2)}AA` }),
    });
    expect(forged.status).toBe(401);
    expect(forged.body).toMatchObject({ code: 'ERR_USE_DPOP_NONCE' });
  });

  it("server nonces ahead of expiry: a proof with the last step's nonce gets the next one on its 200", async () => {
    // What a replica handed out half a lifetime (the default 300 s) ago, from the shared ring:
    // good still, in its last half-life.
    const earlier = new DpopNonces(assertionKeys, 300, () => Date.now() - 150_000).current();
    const path = '/v1/nonce/ahead';
    const renewed = await call({
      path,
      authorization: `DPoP ${token}`,
      dpop: await proofFor('GET', path, { nonce: earlier }),
    });
    expect(renewed.status).toBe(200);
    const next = renewed.headers['dpop-nonce'] as string;
    expect(next).toMatch(/\S{20,}/);
    expect(next).not.toBe(earlier);
    // The next one holds at the other replica, which has nothing newer to offer.
    const steady = await call({
      path,
      authorization: `DPoP ${token}`,
      dpop: await proofFor('GET', path, { nonce: next }),
      replica: replicas[1]!,
    });
    expect(steady.status).toBe(200);
    expect(steady.headers['dpop-nonce']).toBeUndefined();
  });

  it('counts failed proofs as failed authentication: over the limit the address gets 429', async () => {
    const own = newRedis();
    try {
      const throttled = await startReplica(
        { rateLimits: { authFailures: { limit: 3, window: '60s', newCredentials: 0 } } },
        own,
      );
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const reply = await call({
          authorization: `DPoP ${token}`,
          dpop: await proofFor('POST', '/v1/orders'),
          replica: throttled,
        });
        statuses.push(reply.status);
      }
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
    } finally {
      await own.quit();
    }
  });
});

/** The `ath` of the test's token, as a proof carries it. */
async function proofClaims(): Promise<{ ath: string }> {
  return decodeJwt(await proofFor('GET', '/v1/orders'));
}
