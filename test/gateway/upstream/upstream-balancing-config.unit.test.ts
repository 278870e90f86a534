/**
 * The config of several targets per route (`upstreams`, `healthCheck`, `proxy`), validated by
 * gateway/config/load.ts: every bad key by its path, and the defaults filled.
 * upstream-balancing.test.ts runs such configs against real target processes.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../gateway/config/load.ts';

describe('config', () => {
  it('reports every bad key of targets and health checks by path, at once', () => {
    let error: unknown;
    try {
      parseConfig({
        routes: [
          { prefix: '/a', upstream: 'http://a:1', upstreams: [{ url: 'http://b:1' }] },
          { prefix: '/b' },
          {
            prefix: '/c',
            upstreams: [{ url: 'http://c:1', weight: 0 }, { url: 'ftp://c:2' }],
          },
          {
            prefix: '/d',
            upstreams: [{ url: 'http://d:1/path' }, { url: 'http://d:1' }],
            healthCheck: { path: '/healthz', intervalMs: 1000, timeoutMs: 1000 },
          },
        ],
        proxy: {
          outlierDetection: { baseEjectionMs: 5000, maxEjectionMs: 1000 },
          retryBudget: { percent: 101 },
        },
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual(
      expect.arrayContaining([
        'routes[2].upstreams[0].weight: must be >= 1',
        'proxy.retryBudget.percent: must be <= 100',
      ]),
    );
    // Cross-field problems come once the schema passes; a second config shows those.
    let second: unknown;
    try {
      parseConfig({
        routes: [
          { prefix: '/a', upstream: 'http://a:1', upstreams: [{ url: 'http://b:1' }] },
          { prefix: '/b' },
          { prefix: '/c', upstreams: [{ url: 'http://c:1' }, { url: 'ftp://c:2' }] },
          {
            prefix: '/d',
            upstreams: [{ url: 'http://d:1/path' }, { url: 'http://d:1' }],
            healthCheck: { path: '/healthz', intervalMs: 1000, timeoutMs: 1000 },
          },
        ],
        proxy: { outlierDetection: { baseEjectionMs: 5000, maxEjectionMs: 1000 } },
      });
    } catch (caught) {
      second = caught;
    }
    expect((second as ConfigError).problems).toEqual([
      'routes[0]: needs exactly one of upstream and upstreams',
      // Since 9f61628 a route may take its upstream from a parent route (inheritance).
      'routes[1]: needs exactly one of upstream and upstreams, or a parent route that has one',
      'routes[2].upstreams[1].url: must be an http: or https: URL',
      'routes[3].upstreams[0].url: must be an origin only (scheme, host, port)',
      'routes[3].upstreams[1].url: http://d:1 is listed already',
      'routes[3].healthCheck.timeoutMs: must be below intervalMs (1000)',
      'proxy.outlierDetection.maxEjectionMs: must be at least baseEjectionMs (5000)',
    ]);
  });

  it('fills target weights and health check defaults', () => {
    const { config } = parseConfig({
      routes: [
        {
          prefix: '/v1',
          upstreams: [{ url: 'http://a:1' }, { url: 'http://b:1', weight: 4 }],
          healthCheck: {},
        },
      ],
    });
    expect(config.routes[0]).toMatchObject({
      upstreams: [
        { url: 'http://a:1', weight: 1 },
        { url: 'http://b:1', weight: 4 },
      ],
      healthCheck: {
        path: '/healthz',
        intervalMs: 5000,
        timeoutMs: 1000,
        healthyAfter: 2,
        unhealthyAfter: 3,
      },
    });
    expect(config.proxy.retryBudget).toEqual({ percent: 20, minRetryConcurrency: 3 });
  });
});
