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
