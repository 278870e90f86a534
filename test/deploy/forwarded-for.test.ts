/**
 * Client addresses that cannot be forged: `proxy.trustProxy` names whom it trusts (addresses or
 * CIDRs, or a hop count), never anyone. Tested from the attacker's side: bad tokens, each with
 * an X-Forwarded-For of its own, must still run into the failed-authentication throttle, which
 * counts per client address. Real HTTPS, real signed tokens; every request comes from 127.0.0.1.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigError, parseConfig } from '../../gateway/config/load.ts';
import { startPortico, type Portico } from '../e2e/support/portico.ts';
import { read } from './support/deploy-files.ts';

const LIMIT = 5;
const started: Portico[] = [];
afterAll(async () => {
  for (const portico of started) await portico.close();
});

async function withTrust(trustProxy: unknown): Promise<Portico> {
  const portico = await startPortico({
    // newCredentials: 0 keeps the strict lockout, so that every bad token past the limit is
    // refused by the address count under test; the default budget of new credentials per
    // address is tested in the failed-auth throttle's own test.
    config: {
      proxy: { trustProxy },
      rateLimits: { authFailures: { limit: LIMIT, window: '60s', newCredentials: 0 } },
    },
  });
  started.push(portico);
  return portico;
}

/** Statuses of bad tokens sent one after the other, each with the X-Forwarded-For `forwardedFor(i)` says. */
async function badTokens(
  portico: Portico,
  count: number,
  forwardedFor: (i: number) => string,
): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const headers = { 'x-forwarded-for': forwardedFor(i) };
    statuses.push((await portico.call('GET', '/v1/orders', { token: `not-a-token-${i}`, headers })).status);
  }
  return statuses;
}

const throttled = Array.from({ length: 2 * LIMIT }, (_, i) => (i < LIMIT ? 401 : 429));
const forged = (i: number) => `198.51.100.${i + 1}`;

describe('proxy.trustProxy, from the attacker side', () => {
  it.each(['deploy/portico.yaml', 'deploy/kubernetes/base/portico.yaml'])(
    'the trust %s ships: a forged X-Forwarded-For per request does not dodge the throttle',
    async (file) => {
      const shipped = (parse(read(file)) as { proxy?: { trustProxy?: unknown } }).proxy?.trustProxy ?? false;
      expect(await badTokens(await withTrust(shipped), 2 * LIMIT, forged)).toEqual(throttled);
    },
  );

  it('a client that is not one of the named proxies: its X-Forwarded-For is not read', async () => {
    const portico = await withTrust(['192.0.2.10', '10.0.0.0/8']);
    expect(await badTokens(portico, 2 * LIMIT, forged)).toEqual(throttled);
  });

  it.each([[['127.0.0.0/8']], [1]])(
    'behind a named proxy (%j), the address it appended counts, not what the client wrote before it',
    async (trustProxy) => {
      const portico = await withTrust(trustProxy);
      // The proxy (127.0.0.1 here) appends the address it saw after the client's own claims.
      const attacker = await badTokens(portico, 2 * LIMIT, (i) => `${forged(i)}, 203.0.113.7`);
      expect(attacker).toEqual(throttled);
      // Another client behind the same proxy has a count of its own.
      expect(await badTokens(portico, 1, () => '203.0.113.8')).toEqual([401]);
    },
  );

  it('`true` (anyone) is refused with a config error naming the key', () => {
    let problems: readonly string[] = [];
    try {
      parseConfig({ proxy: { trustProxy: true } }, { env: {} });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems).toEqual([expect.stringMatching(/^proxy\.trustProxy: /)]);
    for (const bad of [['not-an-address'], ['10.0.0.0/33'], 0, []]) {
      expect(() => parseConfig({ proxy: { trustProxy: bad } }, { env: {} }), JSON.stringify(bad)).toThrow(
        ConfigError,
      );
    }
  });
});
