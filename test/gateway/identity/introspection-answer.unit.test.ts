/**
 * What an introspection answer may and may not grant, one rule at a time: the answers an
 * identity provider (or whoever stands in for it) could send, and the config that would let a
 * deployment trust the wrong endpoint or leak its client credential.
 */
import { describe, expect, it } from 'vitest';
import { checkAuthConfig } from '../../../gateway/config/schema/identity.ts';
import { answerJudge } from '../../../gateway/identity/introspection/answer.ts';
import { loadClientCredential } from '../../../gateway/identity/introspection/client-credential.ts';
import { createAuthenticator } from '../../../gateway/identity/authenticate.ts';
import { authConfig, memoryLogger, tempDir } from './support/fixtures.ts';

const NOW = 1_800_000_000_000;
const judge = answerJudge({
  issuer: 'https://idp.test',
  audience: ['https://api.portico.test'],
  customerClaim: 'customer_id',
  clockSkewSeconds: 30,
  maxLifetimeSeconds: 3600,
});
const GOOD = {
  active: true,
  iss: 'https://idp.test',
  aud: 'https://api.portico.test',
  client_id: 'svc',
  customer_id: 'c1',
  scope: 'orders:read unknown:scope',
  token_type: 'Bearer',
  iat: NOW / 1000 - 10,
  exp: NOW / 1000 + 600,
};
const reasonOf = (answer: Record<string, unknown>) => {
  const meaning = judge(answer, NOW);
  return meaning.ok ? 'ok' : meaning.reason;
};

describe('an introspection answer', () => {
  it('grants what it says: subject (sub, else client_id), customer, known scopes, exp, cnf', () => {
    expect(judge(GOOD, NOW)).toEqual({
      ok: true,
      principal: { subject: 'svc', customerId: 'c1', scopes: ['orders:read'], authMethod: 'jwt' },
      expiresAt: GOOD.exp * 1000,
    });
    const jkt = 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs';
    const bound = judge({ ...GOOD, sub: 'user-1', token_type: 'DPoP', cnf: { jkt } }, NOW);
    expect(bound).toMatchObject({ ok: true, principal: { subject: 'user-1', cnf: { jkt } } });
  });

  it('is refused when inactive, for another audience or issuer, or not for an access token', () => {
    expect(reasonOf({ ...GOOD, active: false })).toBe('token not active');
    expect(reasonOf({ ...GOOD, active: 'true' })).toBe('token not active');
    expect(reasonOf({ ...GOOD, aud: 'https://other.api.test' })).toBe('unexpected audience');
    expect(reasonOf({ ...GOOD, aud: undefined })).toBe('unexpected audience');
    expect(reasonOf({ ...GOOD, aud: ['https://other.api.test', 'https://api.portico.test'] })).toBe('ok');
    expect(reasonOf({ ...GOOD, iss: 'https://evil.test' })).toBe('unexpected issuer');
    expect(reasonOf({ ...GOOD, token_type: 'refresh_token' })).toBe('not an access token');
  });

  it('is refused on its times: expired, not yet valid, from the future, too long-lived, malformed', () => {
    expect(reasonOf({ ...GOOD, exp: NOW / 1000 - 31 })).toBe('token expired');
    expect(reasonOf({ ...GOOD, nbf: NOW / 1000 + 60 })).toBe('token not yet valid');
    expect(reasonOf({ ...GOOD, iat: NOW / 1000 + 60 })).toBe('token issued in the future');
    expect(reasonOf({ ...GOOD, exp: GOOD.iat + 3601 })).toBe('token lifetime exceeds the maximum');
    expect(reasonOf({ ...GOOD, exp: '9999999999' })).toBe('malformed time claim');
  });

  it('is refused without a subject, a valid customer, well-formed scopes or cnf', () => {
    expect(reasonOf({ ...GOOD, client_id: undefined })).toBe('malformed sub claim');
    expect(reasonOf({ ...GOOD, customer_id: '../c1' })).toBe('token lacks a valid customer_id claim');
    expect(reasonOf({ ...GOOD, scope: 7 })).toBe('malformed scope claim');
    expect(reasonOf({ ...GOOD, cnf: { jwk: {} } })).toBe('unsupported cnf confirmation method');
  });
});

describe('auth.introspection config', () => {
  const base = {
    endpoint: 'https://idp.test/introspect',
    issuer: 'https://idp.test',
    audience: 'a',
    clientId: 'gw',
  };

  it('refuses a plain-http endpoint off loopback, the wrong secret for the method, acceptJwt without keys', () => {
    const problems = (introspection: Record<string, unknown>) =>
      checkAuthConfig(authConfig({ introspection: { ...base, ...introspection } }));
    expect(problems({})).toEqual([]);
    expect(problems({ endpoint: 'http://127.0.0.1:8080/x' })).toEqual([]);
    expect(problems({ endpoint: 'http://idp.test/introspect' })).toEqual([
      '/auth/introspection/endpoint: must be https (http only for loopback hosts)',
    ]);
    expect(problems({ privateKeyFile: '/k' })).toEqual([
      '/auth/introspection/privateKeyFile: only with clientAuth private_key_jwt',
    ]);
    expect(problems({ clientAuth: 'private_key_jwt', clientSecretFile: '/s' })).toEqual([
      '/auth/introspection/clientSecretFile: only with clientAuth client_secret_basic',
    ]);
    expect(problems({ acceptJwt: true })).toEqual([
      '/auth/introspection/acceptJwt: needs auth.jwt.jwksUrl or jwksFile (the issuer whose JWTs are accepted)',
    ]);
  });

  it('jwtResponse needs keys of that issuer: its own jwksUrl (https), or auth.jwt naming it', () => {
    const problems = (introspection: Record<string, unknown>, jwt: Record<string, unknown> = {}) =>
      checkAuthConfig(authConfig({ introspection: { ...base, ...introspection }, jwt }));
    const jwtOf = (issuer: string) => ({ issuer, audience: 'a', jwksUrl: 'https://idp.test/jwks' });
    expect(problems({ jwtResponse: true, jwksUrl: 'https://idp.test/jwks' })).toEqual([]);
    expect(problems({ jwtResponse: true }, jwtOf('https://idp.test'))).toEqual([]);
    const needsKeys =
      '/auth/introspection/jwtResponse: needs jwksUrl, or auth.jwt.jwksUrl or jwksFile with auth.jwt.issuer "https://idp.test" (the keys signed answers are verified with)';
    expect(problems({ jwtResponse: true })).toEqual([needsKeys]);
    expect(problems({ jwtResponse: true }, jwtOf('https://other.test'))).toEqual([needsKeys]);
    expect(problems({ jwtResponse: true, jwksUrl: 'http://idp.test/jwks' })).toEqual([
      '/auth/introspection/jwksUrl: must be https (http only for loopback hosts)',
    ]);
    expect(problems({ jwksUrl: 'https://idp.test/jwks' })).toEqual([
      '/auth/introspection/jwksUrl: only with jwtResponse (the keys of signed answers)',
    ]);
  });

  it('fails at start when the secret or key is missing or unusable, never quoting it', () => {
    const config = authConfig({ introspection: base }).introspection!;
    expect(() => loadClientCredential(config, {})).toThrow(/PORTICO_INTROSPECTION_CLIENT_SECRET/);
    const keyed = authConfig({ introspection: { ...base, clientAuth: 'private_key_jwt' } }).introspection!;
    expect(() => loadClientCredential(keyed, {})).toThrow(/PORTICO_INTROSPECTION_PRIVATE_KEY/);
    const bad = 'not-a-key-but-a-secret-s3cr3t';
    expect(() => loadClientCredential(keyed, { PORTICO_INTROSPECTION_PRIVATE_KEY: bad })).toThrow(
      /not a PKCS#8 PEM or private JWK usable with ES256/,
    );
    try {
      loadClientCredential(keyed, { PORTICO_INTROSPECTION_PRIVATE_KEY: bad });
    } catch (error) {
      expect((error as Error).message).not.toContain('s3cr3t');
    }
  });

  it('opaque tokens alone trust no JWT issuer: the development issuer is not loaded', () => {
    const log = memoryLogger();
    const auth = createAuthenticator(authConfig({ introspection: base }), {
      dataDir: tempDir('opaque-only'),
      logger: log.logger,
      env: { PORTICO_INTROSPECTION_CLIENT_SECRET: 'x' },
    });
    expect(log.lines()).toContain('introspecting opaque access tokens');
    expect(log.lines()).not.toContain('development issuer');
    expect(auth.ready()).toBe(true);
    auth.close();
  });
});
