/**
 * The attacker's side of the service's identity: only a valid gateway assertion for this very
 * request counts; headers a client could send count for nothing.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signAssertion, verifyAssertion } from '../../shared/identity-assertion.ts';
import type { AssertionKey } from '../../shared/identity-assertion.ts';
import { rawRequest, SAMPLE_ORDER, startTestService } from '../support/service.ts';
import type { TestService } from '../support/service.ts';

/** The service's log lines: where the reason for a refusal goes, instead of the answer. */
const logLines: Record<string, unknown>[] = [];
let service: TestService;
beforeAll(async () => {
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n'))
        if (line !== '') logLines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  service = await startTestService({ logger: pino({ level: 'info' }, destination) });
});
afterAll(async () => {
  await service.close();
});

const principal = {
  subject: 'u1',
  customerId: 'cus_identity_1',
  scopes: ['orders:read'],
  authMethod: 'jwt' as const,
};

function key(): AssertionKey {
  return service.keys[0] as AssertionKey;
}

/**
 * A refusal that tells the caller nothing about why: every refused assertion gets the same
 * document as a request that sent none, so a prober learns neither kids nor clock skew.
 */
async function expectRefused(assertion: string | null, path = '/v1/orders', method = 'GET') {
  const res = await rawRequest(service.url, method, path, { assertion });
  expect(res.status).toBe(401);
  expect(res.body.code).toBe('ERR_INVALID_ASSERTION');
  expect(res.headers.get('www-authenticate')).toMatch(/^Portico-Identity/);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const none = await rawRequest(service.url, method, path, { assertion: null });
  expect(res.body).toEqual(none.body);
  expect(res.body).not.toHaveProperty('reason');
  return res;
}

/** The service's log line for the refusal of request `requestId`. */
function refusalLogged(requestId: string): Record<string, unknown> | undefined {
  return logLines.find((line) => line['requestId'] === requestId && line['reason'] !== undefined);
}

describe('identity assertion at the service', () => {
  it('accepts a valid assertion', async () => {
    const ok = await rawRequest(service.url, 'GET', '/v1/users/me', {
      assertionFor: { key: key(), principal },
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      customer_id: 'cus_identity_1',
      scopes: ['orders:read'],
      auth_method: 'jwt',
    });
  });

  it('refuses a request with no assertion, whatever identity headers the client adds', async () => {
    const res = await rawRequest(service.url, 'GET', '/v1/orders', {
      assertion: null,
      headers: {
        authorization: 'Bearer anything',
        'x-user-id': 'cus_identity_1',
        'x-customer-id': 'cus_identity_1',
      },
    });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('ERR_INVALID_ASSERTION');
  });

  it('refuses an assertion signed with another key, even under the right kid', async () => {
    const forged = signAssertion({ kid: key().kid, secret: randomBytes(32) }, principal, {
      method: 'GET',
      target: '/v1/orders',
      requestId: 'r',
    });
    await expectRefused(forged);
  });

  it('refuses an unknown kid, a tampered payload, garbage and an oversized header', async () => {
    const valid = signAssertion(key(), principal, { method: 'GET', target: '/v1/orders', requestId: 'r' });
    const [version, kid, payload, signature] = valid.split('.') as [string, string, string, string];
    const unknownKid = await expectRefused([version, 'other-kid', payload, signature].join('.'));
    expect(unknownKid.text).not.toMatch(/kid/i);

    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const escalated = Buffer.from(JSON.stringify({ ...claims, cid: 'cus_victim', scp: ['admin'] })).toString(
      'base64url',
    );
    await expectRefused([version, kid, escalated, signature].join('.'));
    await expectRefused('v1.test.e30.');
    await expectRefused('not-an-assertion');
    await expectRefused(`v1.${kid}.${'A'.repeat(9000)}.${signature}`);
  });

  it('refuses an expired assertion and one issued in the future', async () => {
    const target = { method: 'GET', target: '/v1/orders', requestId: 'r' };
    const past = signAssertion(key(), principal, target, { now: () => Date.now() - 10 * 60_000 });
    const res = await expectRefused(past);
    expect(res.text).not.toMatch(/expired/i);
    // The operator still learns why, from the service's log line for that request.
    expect(refusalLogged(res.headers.get('x-request-id') ?? '')).toMatchObject({ reason: 'expired' });
    const future = signAssertion(key(), principal, target, { now: () => Date.now() + 10 * 60_000 });
    await expectRefused(future);
  });

  it('refuses an assertion replayed against another method or path', async () => {
    const forGet = signAssertion(key(), principal, { method: 'GET', target: '/v1/orders', requestId: 'r' });
    await expectRefused(forGet, '/v1/orders', 'POST');
    await expectRefused(forGet, '/v1/orders?status=paid');
    await expectRefused(forGet, '/v1/users/me');
  });

  it('refuses a correctly signed assertion with a long lifetime or malformed claims', async () => {
    const sign = (claims: object) => {
      const input = `v1.${key().kid}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
      return `${input}.${createHmac('sha256', key().secret).update(input).digest('base64url')}`;
    };
    const now = Math.floor(Date.now() / 1000);
    const base = {
      sub: 'u',
      cid: 'c1',
      scp: [],
      amr: 'jwt',
      htm: 'GET',
      htu: '/v1/orders',
      rid: 'r',
      iat: now,
    };
    await expectRefused(sign({ ...base, exp: now + 86_400 }));
    await expectRefused(sign({ ...base, exp: now + 30, cid: "x' or 1=1 --" }));
    await expectRefused(sign({ ...base, exp: now + 30, scp: 'admin' }));
  });

  it('refuses a genuine signature re-spelt: another padding character or a character outside base64url', () => {
    const signing: AssertionKey = { kid: 'k', secret: randomBytes(32) };
    const request = { method: 'GET', target: '/x', requestId: 'r' };
    const genuine = signAssertion(signing, principal, request);
    const signature = genuine.slice(genuine.lastIndexOf('.') + 1);
    const prefix = genuine.slice(0, genuine.lastIndexOf('.') + 1);
    expect(verifyAssertion([signing], genuine, request).ok).toBe(true);
    // 43 characters hold 258 bits: the last one's 2 low bits are padding; decoding also skips
    // characters outside the alphabet. Each gives the same bytes under another spelling.
    const last = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const repadded = signature.slice(0, -1) + last[last.indexOf(signature.at(-1)!) ^ 1]!;
    const padded = `${signature.slice(0, 10)}!${signature.slice(10)}`;
    for (const respelt of [repadded, padded])
      expect(verifyAssertion([signing], prefix + respelt, request)).toEqual({
        ok: false,
        reason: 'bad signature',
      });
  });

  it('signs exactly the claims of the principal and of this request, as JSON in their order', () => {
    const signing: AssertionKey = { kid: 'k', secret: randomBytes(32) };
    const keyHolder = {
      subject: 'key_1',
      customerId: 'cus_identity_2',
      scopes: ['orders:read', 'orders:write'],
      authMethod: 'apikey' as const,
      keyId: 'key_1',
    };
    const now = 1_700_000_000_500;
    // Twice with each principal: the second assertion reuses what the first made of it.
    for (const who of [principal, keyHolder, principal, keyHolder])
      for (const request of [
        { method: 'GET', target: '/v1/orders?q="x"\\\u2028', requestId: 'r-1' },
        { method: 'DELETE', target: '/v1/orders/o1', requestId: 'r-2' },
      ]) {
        const assertion = signAssertion(signing, who, request, { now: () => now, lifetimeSeconds: 60 });
        const payload = Buffer.from(assertion.split('.')[2]!, 'base64url').toString();
        expect(payload).toBe(
          JSON.stringify({
            sub: who.subject,
            cid: who.customerId,
            scp: who.scopes,
            amr: who.authMethod,
            ...('keyId' in who ? { akid: who.keyId } : {}),
            htm: request.method,
            htd: createHash('sha256').update(request.target).digest('base64url'),
            rid: request.requestId,
            iat: 1_700_000_000,
            exp: 1_700_000_060,
          }),
        );
        expect(verifyAssertion([signing], assertion, request, { now: () => now }).ok).toBe(true);
      }
  });

  it('binds the target by its digest: the assertion does not grow with it, and another target is refused', () => {
    const signing: AssertionKey = { kid: 'k', secret: randomBytes(32) };
    const long = { method: 'GET', target: `/v1/orders/${'a'.repeat(4085)}`, requestId: 'r' };
    const short = { method: 'GET', target: '/v1/orders/a', requestId: 'r' };
    const assertion = signAssertion(signing, principal, long);
    expect(assertion.length).toBe(signAssertion(signing, principal, short).length);
    expect(verifyAssertion([signing], assertion, long).ok).toBe(true);
    expect(verifyAssertion([signing], assertion, { ...long, target: `${long.target}b` })).toEqual({
      ok: false,
      reason: 'issued for another request',
    });
  });

  it('still verifies the earlier spelling with the target itself (htu), for either end upgraded first', () => {
    const signing: AssertionKey = { kid: 'k', secret: randomBytes(32) };
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      sub: 'u',
      cid: 'c1',
      scp: [],
      amr: 'jwt',
      htm: 'GET',
      htu: '/v1/orders',
      rid: 'r',
      iat: now,
      exp: now + 30,
    };
    const input = `v1.k.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    const earlier = `${input}.${createHmac('sha256', signing.secret).update(input).digest('base64url')}`;
    expect(verifyAssertion([signing], earlier, { method: 'GET', target: '/v1/orders' }).ok).toBe(true);
    expect(verifyAssertion([signing], earlier, { method: 'GET', target: '/v1/orders?x' }).ok).toBe(false);
  });

  it('verifies with every key of the ring, so keys rotate without downtime', () => {
    const old: AssertionKey = { kid: 'old', secret: randomBytes(32) };
    const fresh: AssertionKey = { kid: 'new', secret: randomBytes(32) };
    const request = { method: 'GET', target: '/x', requestId: 'r' };
    const byOld = signAssertion(old, principal, request);
    expect(verifyAssertion([fresh, old], byOld, request).ok).toBe(true);
    expect(verifyAssertion([fresh], byOld, request)).toEqual({ ok: false, reason: 'unknown kid' });
  });
});

describe('scopes', () => {
  it('answers 403 insufficient_scope naming the missing scope, and changes nothing', async () => {
    const reader = service.as({ customerId: 'cus_scope_1', scopes: ['orders:read'] });
    const res = await reader.request('POST', '/v1/orders', { body: SAMPLE_ORDER });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'ERR_INSUFFICIENT_SCOPE', required_scope: 'orders:write' });
    expect(res.headers.get('www-authenticate')).toBe(
      'Bearer error="insufficient_scope", scope="orders:write"',
    );
    expect((await reader.request('GET', '/v1/orders')).body.data).toEqual([]);

    const writer = service.as({ customerId: 'cus_scope_2', scopes: ['orders:write'] });
    expect((await writer.request('GET', '/v1/orders')).status).toBe(403);
    expect(
      (await writer.request('POST', '/v1/payments', { body: { order_id: 'x', amount: 1 } })).status,
    ).toBe(403);
    expect((await writer.request('GET', '/v1/customers/cus_scope_2/invoices')).status).toBe(403);
    // An unknown scope grants nothing.
    const odd = service.as({ customerId: 'cus_scope_3', scopes: ['orders:*', 'admin:read'] });
    expect((await odd.request('GET', '/v1/orders')).status).toBe(403);
  });
});
