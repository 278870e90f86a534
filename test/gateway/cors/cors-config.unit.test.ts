/**
 * The per-route `cors` config, validated by gateway/config/load.ts: what it refuses, each
 * problem named by its path. cors.test.ts runs valid configs through a gateway.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../gateway/config/load.ts';

const APP = 'https://app.example.com';

describe('config', () => {
  const problemsOf = (cors: unknown): readonly string[] => {
    try {
      parseConfig({ routes: [{ prefix: '/v1', upstream: 'http://127.0.0.1:1', cors }] });
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
    return [];
  };

  it('refuses * with credentials', () => {
    expect(problemsOf({ origins: ['*'], credentials: true })).toEqual([
      'routes[0].cors.origins: "*" cannot be used with credentials: true; list the values',
    ]);
    expect(problemsOf({ origins: [APP], headers: ['*'], credentials: true })[0]).toMatch(
      /^routes\[0\]\.cors\.headers:/,
    );
  });

  it('refuses what is not an origin, each by its path', () => {
    const problems = problemsOf({
      origins: [
        APP,
        'https://app.example.com/',
        'https://App.example.com',
        'null',
        'app.example.com',
        'https://x:443',
      ],
    });
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      'routes[0].cors.origins[1]',
      'routes[0].cors.origins[2]',
      'routes[0].cors.origins[3]',
      'routes[0].cors.origins[4]',
      'routes[0].cors.origins[5]',
    ]);
    expect(problemsOf({ origins: ['*', APP] })[0]).toMatch(/cannot be listed with others/);
    expect(problemsOf({ origins: [APP, 'http://localhost:5173'] })).toEqual([]);
  });
});

describe('a route open to browsers that takes DPoP proofs', () => {
  const warningsOf = (cors: Record<string, unknown>, tokenBinding: Record<string, unknown>) =>
    parseConfig({
      routes: [
        { prefix: '/v1', upstream: 'http://127.0.0.1:1', cors: { origins: [APP], ...cors }, tokenBinding },
      ],
    }).warnings.filter((warning) => warning.includes('DPoP'));

  it('needs nothing more with the default lists, which allow DPoP and expose DPoP-Nonce', () => {
    expect(warningsOf({}, { require: 'dpop', dpopNonce: true })).toEqual([]);
    expect(warningsOf({ headers: ['*'], exposeHeaders: ['*'] }, { dpopNonce: true })).toEqual([]);
  });

  it('is warned about when its own lists keep a page from sending a proof or reading a nonce', () => {
    const warnings = warningsOf(
      { headers: ['Authorization'], exposeHeaders: ['ETag'] },
      { require: 'dpop', dpopNonce: true },
    );
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/^route \/v1 .*cors\.headers does not list DPoP/);
    expect(warnings[1]).toMatch(/^route \/v1 .*cors\.exposeHeaders does not list DPoP-Nonce/);
    // Without DPoP on the route, its lists are its own business.
    expect(warningsOf({ headers: ['Authorization'] }, { require: 'certificate' })).toEqual([]);
  });
});
