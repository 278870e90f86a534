/**
 * An authenticator that introspects opaque tokens at the external identity provider (through
 * a relay the test controls), on a clock the test moves: what the introspection tests build.
 */
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createAuthenticator, type Authenticator } from '../../../../gateway/identity/authenticate.ts';
import { startExternalIdp, type ExternalIdp } from './external-idp.ts';
import { authConfig, memoryLogger, tempDir, testClock } from './fixtures.ts';
import { AUDIENCE } from './idp-audiences.ts';
import { startRelay, type Relay } from './relay.ts';

export { AUDIENCE };
export const GATEWAY_SECRET = 'portico-gateway-secret';

export interface IntrospectingOptions {
  env?: NodeJS.ProcessEnv;
  jwt?: Record<string, unknown>;
  redis?: Redis;
}

/** `endpoint`: where the gateway asks (a relay); `introspection`: keys over the defaults. */
export function introspectingAuthenticator(
  endpoint: string,
  issuer: string,
  introspection: Record<string, unknown> = {},
  options: IntrospectingOptions = {},
) {
  const log = memoryLogger();
  const clock = testClock();
  const auth = createAuthenticator(
    authConfig({
      ...(options.jwt === undefined ? {} : { jwt: options.jwt }),
      introspection: { endpoint, issuer, audience: AUDIENCE, clientId: 'portico-gateway', ...introspection },
    }),
    {
      dataDir: tempDir('introspection'),
      logger: log.logger,
      env: options.env ?? { PORTICO_INTROSPECTION_CLIENT_SECRET: GATEWAY_SECRET },
      now: clock.now,
      ...(options.redis === undefined ? {} : { redis: options.redis }),
    },
  );
  return {
    auth,
    log,
    clock,
    bearer: (token: string) => auth.authenticate({ authorization: `Bearer ${token}` }, '/v1/orders'),
  };
}

/**
 * The provider in its own process and a relay in front of its introspection endpoint, for
 * the tests of one file: started before them and stopped after; after each test, the
 * authenticators it built are closed and the relay forwards as is again.
 */
export function useIntrospectionBench() {
  let idp: ExternalIdp | undefined;
  let relay: Relay | undefined;
  const open: Authenticator[] = [];
  beforeAll(async () => {
    idp = await startExternalIdp();
    relay = await startRelay(`${idp.issuer}/token/introspection`);
  }, 30_000);
  afterEach(() => {
    for (const auth of open.splice(0)) auth.close();
    if (relay === undefined) return;
    relay.down = false;
    relay.delayMs = 0;
    relay.tamper = undefined;
  });
  afterAll(async () => {
    await relay?.close();
    await idp?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the introspection bench is not started');
    return value;
  };
  return {
    get idp() {
      return started(idp);
    },
    get relay() {
      return started(relay);
    },
    /** An authenticator asking through the relay, closed after the test. */
    gateway: (introspection: Record<string, unknown> = {}, options: IntrospectingOptions = {}) => {
      const built = introspectingAuthenticator(
        started(relay).url,
        started(idp).issuer,
        introspection,
        options,
      );
      open.push(built.auth);
      return built;
    },
  };
}
