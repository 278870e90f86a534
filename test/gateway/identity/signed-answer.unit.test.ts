/**
 * What a signed introspection answer (RFC 9701) must be, one rule at a time, with real
 * signatures: the JWTs an identity provider, or whoever stands in for it, could send. Each
 * refusal is the endpoint misbehaving (the caller answers 503), never the token refused.
 */
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { createStaticKeySource } from '../../../gateway/identity/key-source.ts';
import { signedAnswerReader } from '../../../gateway/identity/introspection/signed-answer.ts';

const ISSUER = 'https://idp.test';
const CLIENT = 'portico-gateway';
const NOW = 1_800_000_000_000;
const ANSWER = { active: true, client_id: 'svc', customer_id: 'c1', aud: 'https://api.test' };

let providerKey: CryptoKey;
let read: ReturnType<typeof signedAnswerReader>;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  providerKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
  read = signedAnswerReader({
    keys: createStaticKeySource({ keys: [jwk] }),
    issuer: ISSUER,
    clientId: CLIENT,
    algorithms: ['ES256'],
    clockSkewSeconds: 30,
    now: () => NOW,
  });
});

/** A signed answer as oidc-provider makes one, with `changes` over its claims and header. */
function signed(
  changes: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  key = providerKey,
) {
  return new SignJWT({
    iss: ISSUER,
    aud: CLIENT,
    iat: NOW / 1000,
    token_introspection: ANSWER,
    ...changes,
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'token-introspection+jwt', kid: 'k1', ...header })
    .sign(key);
}

const reasonOf = async (text: string) => {
  const result = await read(text);
  return result.ok ? 'ok' : result.reason;
};

describe('a signed introspection answer', () => {
  it('gives its token_introspection claim, typ spelled either way RFC 8725 allows', async () => {
    expect(await read(await signed())).toEqual({ ok: true, answer: ANSWER });
    const long = await signed({}, { typ: 'application/token-introspection+jwt' });
    expect(await reasonOf(long)).toBe('ok');
  });

  it('is refused when it is not a JWS: JSON (a downgrade), or anything else', async () => {
    expect(await reasonOf(JSON.stringify(ANSWER))).toBe('answer is not a signed JWT');
    expect(await reasonOf('a.b.c')).toBe('answer is not a signed JWT');
  });

  it('is refused signed by another key, or with an algorithm not allowed', async () => {
    const other = (await generateKeyPair('ES256')).privateKey;
    expect(await reasonOf(await signed({}, {}, other))).toContain('ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
    const rsa = (await generateKeyPair('RS256')).privateKey;
    expect(await reasonOf(await signed({}, { alg: 'RS256' }, rsa))).toContain('ERR_JOSE_ALG_NOT_ALLOWED');
  });

  it('is refused with another typ, issuer or audience', async () => {
    expect(await reasonOf(await signed({}, { typ: 'at+jwt' }))).toContain('(typ)');
    expect(await reasonOf(await signed({}, { typ: undefined }))).toContain('(typ)');
    expect(await reasonOf(await signed({ iss: 'https://evil.test' }))).toContain('(iss)');
    expect(await reasonOf(await signed({ aud: 'other-api' }))).toContain('(aud)');
  });

  it('is refused without iat, or issued outside the clock skew (an old answer replayed)', async () => {
    expect(await reasonOf(await signed({ iat: undefined }))).toContain('(iat)');
    expect(await reasonOf(await signed({ iat: NOW / 1000 - 31 }))).toBe(
      'signed answer refused: iat is not now',
    );
    expect(await reasonOf(await signed({ iat: NOW / 1000 + 31 }))).toBe(
      'signed answer refused: iat is not now',
    );
    expect(await reasonOf(await signed({ iat: NOW / 1000 - 30 }))).toBe('ok');
  });

  it('is refused without a token_introspection object', async () => {
    for (const claim of [undefined, 'active', [ANSWER]])
      expect(await reasonOf(await signed({ token_introspection: claim }))).toBe(
        'signed answer refused: no token_introspection object',
      );
  });

  it('is refused past its exp, when it has one', async () => {
    expect(await reasonOf(await signed({ exp: NOW / 1000 - 60 }))).toContain('ERR_JWT_EXPIRED');
  });
});
