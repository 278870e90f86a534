/**
 * Introspection answers as signed JWTs (RFC 9701) against a real authorization server in its
 * own process (oidc-provider with its `jwtIntrospection` feature), through a relay that the
 * attacker holds: it re-signs the answer with a key of its own, swaps in an answer the provider
 * made for another resource server, or another JWT of the provider, or drops the signature by
 * asking for plain JSON. Each is the endpoint misbehaving: 503, never an allow nor a 401.
 */
import { generateKeyPairSync } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import type { AuthOutcome } from '../../../gateway/identity/authenticate.ts';
import { expectInvalidToken, expectPrincipal } from './support/fixtures.ts';
import { AUDIENCE, useIntrospectionBench } from './support/introspecting.ts';

const SIGNED = 'application/token-introspection+jwt';

const bench = useIntrospectionBench();

/** A gateway asking for signed answers, verified with the provider's JWKS. */
function gateway() {
  return bench.gateway({ jwtResponse: true, jwksUrl: `${bench.idp.issuer}/jwks` });
}

function expectUnavailable(outcome: AuthOutcome): void {
  expect(outcome.ok ? 'allowed' : outcome.problem.status).toBe(503);
  if (!outcome.ok) expect(outcome.problem.code).toBe('ERR_SERVICE_UNAVAILABLE');
}

describe('signed introspection answers (RFC 9701)', () => {
  it('are asked for, verified and read: the token_introspection claim is the answer', async () => {
    const { bearer } = gateway();
    const token = await bench.idp.token('opaque-a', { scope: 'orders:read' });
    const outcome = expectPrincipal(await bearer(token));
    expect(outcome.principal).toEqual({
      subject: 'opaque-a',
      customerId: 'cust-opaque-a',
      scopes: ['orders:read'],
      authMethod: 'jwt',
    });
    expect(bench.relay.lastHeaders?.['accept']).toBe(SIGNED);
    // What the provider sends a client that asks so: a JWT, for that client.
    const answer = await bench.idp.introspect('portico-gateway', token, SIGNED);
    expect(decodeProtectedHeader(answer).typ).toBe('token-introspection+jwt');
    expect(decodeJwt(answer)).toMatchObject({ iss: bench.idp.issuer, aud: 'portico-gateway' });
  });

  it('an inactive signed answer refuses the token (401), as a JSON one does', async () => {
    const { bearer } = gateway();
    expectInvalidToken(await bearer('made-up-token-0123456789'), 'token not active');
  });

  it('takes the keys of auth.jwt when it names the same issuer, JWTs accepted beside', async () => {
    const { bearer } = bench.gateway(
      { jwtResponse: true, acceptJwt: true },
      { jwt: { issuer: bench.idp.issuer, audience: AUDIENCE, jwksUrl: `${bench.idp.issuer}/jwks` } },
    );
    const opaque = expectPrincipal(await bearer(await bench.idp.token('opaque-b')));
    expect(opaque.principal.customerId).toBe('cust-opaque-b');
    expect(bench.relay.lastHeaders?.['accept']).toBe(SIGNED);
    const jwt = expectPrincipal(await bearer(await bench.idp.token('client-plain')));
    expect(jwt.principal.customerId).toBe('cust-plain');
  });
});

describe('readiness with signed answers', () => {
  it('is not ready while the keys of signed answers cannot be loaded, and is once they are', async () => {
    const unreachable = bench.gateway({ jwtResponse: true, jwksUrl: 'http://127.0.0.1:1/jwks' });
    expectUnavailable(await unreachable.bearer(await bench.idp.token('opaque-a')));
    expect(unreachable.auth.ready()).toBe(false);
    const reachable = gateway();
    expectPrincipal(await reachable.bearer(await bench.idp.token('opaque-a')));
    expect(reachable.auth.ready()).toBe(true);
  });
});

describe('attacks on signed introspection answers', () => {
  it('an answer re-signed with another key (the provider key id kept) is a 503', async () => {
    const { bearer, log } = gateway();
    const attacker = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    bench.relay.tamper = {
      body: (answer) =>
        new SignJWT(decodeJwt(answer))
          .setProtectedHeader({ ...decodeProtectedHeader(answer), alg: 'ES256' })
          .sign(attacker),
    };
    expectUnavailable(await bearer(await bench.idp.token('opaque-a')));
    expect(log.lines()).toContain('ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
  });

  it('an answer the provider signed for another resource server (aud) is a 503', async () => {
    const { bearer, log } = gateway();
    const token = await bench.idp.token('opaque-a');
    // Genuine, about this very token, active: but made for `other-api`, not for the gateway.
    const stolen = await bench.idp.introspect('other-api', token, SIGNED);
    expect(decodeJwt(stolen)).toMatchObject({ aud: 'other-api', token_introspection: { active: true } });
    bench.relay.tamper = { body: () => stolen };
    expectUnavailable(await bearer(token));
    expect(log.lines()).toContain('ERR_JWT_CLAIM_VALIDATION_FAILED (aud)');
  });

  it('another JWT the provider signed (an access token) in place of the answer is a 503', async () => {
    const { bearer, log } = gateway();
    const accessToken = await bench.idp.token('client-plain');
    bench.relay.tamper = { body: () => accessToken };
    expectUnavailable(await bearer(await bench.idp.token('opaque-a')));
    expect(log.lines()).toContain('ERR_JWT_CLAIM_VALIDATION_FAILED (typ)');
  });

  it('a plain JSON answer (the signature dropped by asking for JSON) is a 503', async () => {
    const { bearer, log } = gateway();
    bench.relay.tamper = { headers: (headers) => ({ ...headers, accept: 'application/json' }) };
    const token = await bench.idp.token('opaque-a');
    expectUnavailable(await bearer(token));
    expect(log.lines()).toContain('answer is not a signed JWT');
    // The provider did answer, in JSON, and would have said the token is good.
    expect(
      JSON.parse(await bench.idp.introspect('portico-gateway', token, 'application/json')),
    ).toMatchObject({
      active: true,
    });
  });
});
