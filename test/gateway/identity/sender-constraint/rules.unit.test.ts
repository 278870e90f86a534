/**
 * The rules of sender-constraint/ that need no server: how `htu` is normalised (RFC 9449 §4.3),
 * server nonces, the per-process replay memory,
 * and the identity assertion carrying the binding to a service that checks it.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DpopNonces } from '../../../../gateway/identity/sender-constraint/dpop-nonce.ts';
import { normaliseHtu, requestHtu } from '../../../../gateway/identity/sender-constraint/htu.ts';
import { createMemoryProofReplay } from '../../../../gateway/identity/sender-constraint/proof-replay.ts';
import { signAssertion, verifyAssertion } from '../../../../shared/identity-assertion.ts';

const THUMB = 'A'.repeat(43);

describe('htu normalisation', () => {
  it('lower-cases scheme and host, drops the default port, the query and the fragment', () => {
    expect(normaliseHtu('HTTPS://API.Example.COM:443/v1/Orders?x=1#f')).toBe(
      'https://api.example.com/v1/Orders',
    );
    expect(normaliseHtu('https://api.example.com:8443/v1')).toBe('https://api.example.com:8443/v1');
    expect(normaliseHtu('https://api.example.com')).toBe('https://api.example.com/');
  });

  it('decodes escapes of unreserved characters, upper-cases the rest, removes dot segments', () => {
    expect(normaliseHtu('https://a.test/%7euser/%2fx/./b/../c')).toBe('https://a.test/~user/%2Fx/c');
  });

  it('refuses what is no http(s) URI, or carries credentials', () => {
    for (const bad of ['not a uri', 'ftp://a.test/x', 'https://user:pw@a.test/x'])
      expect(normaliseHtu(bad)).toBeUndefined();
  });

  it('believes a forwarded host only from a trusted proxy', () => {
    const req = {
      socket: { remoteAddress: '10.0.0.5' },
      headers: { 'x-forwarded-host': 'api.example.com, inner', 'x-forwarded-proto': 'https' },
    };
    expect(requestHtu(req, 'gw-1:8443', '/v1/x?q', ['10.0.0.0/8'])).toBe('https://api.example.com/v1/x');
    expect(requestHtu(req, 'gw-1:8443', '/v1/x?q', false)).toBe('https://gw-1:8443/v1/x');
  });
});

describe('server nonces', () => {
  const keys = [{ kid: 'k1', secret: randomBytes(32) }];

  it('are good for one to two half-lifetimes, then stale', () => {
    let now = 1_000_000_000_000;
    const nonces = new DpopNonces(keys, 60, () => now);
    const nonce = nonces.current();
    expect(nonces.check(nonce)).toBe('ok');
    now += 30_000;
    expect(nonces.check(nonce)).toBe('ok');
    now += 30_000;
    expect(nonces.check(nonce)).toBe('stale');
    expect(nonces.check(undefined)).toBe('missing');
  });

  it('offer the current nonce ahead of expiry: once the step moves on, or the ring rotates', () => {
    let now = 1_000_000_000_000;
    const nonces = new DpopNonces(keys, 60, () => now);
    const nonce = nonces.current();
    expect(nonces.renewal(nonce)).toBeUndefined();
    now += 30_000;
    // Still good, in its last half-lifetime: the client gets the next one while it works.
    expect(nonces.check(nonce)).toBe('ok');
    const next = nonces.renewal(nonce);
    expect(next).toBe(nonces.current());
    expect(next).not.toBe(nonce);
    expect(nonces.renewal(next!)).toBeUndefined();
    // A new signing key first in the ring: the old key's nonce still holds, and is replaced.
    const rotated = new DpopNonces([{ kid: 'k2', secret: randomBytes(32) }, ...keys], 60, () => now);
    expect(rotated.check(next)).toBe('ok');
    expect(rotated.renewal(next!)).toMatch(/^[0-9a-z]+\.k2\./);
  });

  it("are the same at every replica sharing the ring, and another ring's are refused", () => {
    const now = () => 1_000_000_000_000;
    const nonce = new DpopNonces(keys, 60, now).current();
    expect(new DpopNonces(keys, 60, now).check(nonce)).toBe('ok');
    expect(new DpopNonces([{ kid: 'k1', secret: randomBytes(32) }], 60, now).check(nonce)).toBe('stale');
    expect(new DpopNonces(keys, 60, now).check(`${nonce}x`)).toBe('stale');
  });
});

describe('proof replay without Redis', () => {
  it('remembers a proof until its window ends, and refuses to judge once full', async () => {
    let now = 0;
    const replay = createMemoryProofReplay(() => now, 2);
    expect(await replay.use('k', 'a', 5000)).toBe('first');
    expect(await replay.use('k', 'a', 5000)).toBe('replayed');
    expect(await replay.use('other-key', 'a', 5000)).toBe('first');
    expect(await replay.use('k', 'b', 5000)).toBe('unavailable');
    now = 6000;
    expect(await replay.use('k', 'b', 9000)).toBe('first');
  });
});

describe('the identity assertion', () => {
  it('carries the binding to the service, which reads it back', () => {
    const key = { kid: 'a', secret: randomBytes(32) };
    const principal = {
      subject: 's',
      customerId: 'c1',
      scopes: [],
      authMethod: 'jwt' as const,
      cnf: { jkt: THUMB },
    };
    const request = { method: 'GET', target: '/v1/orders', requestId: 'r' };
    const verified = verifyAssertion([key], signAssertion(key, principal, request), request);
    expect(verified).toMatchObject({ ok: true, principal: { cnf: { jkt: THUMB } } });
  });
});
