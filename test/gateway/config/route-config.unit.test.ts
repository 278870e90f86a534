/**
 * The route keys of issue 36 (inheritance, stripPrefix/rewrite, methods/hosts/headers): what
 * a route takes from its parent, and one readable line per bad value. Their behaviour over
 * sockets: test/gateway/stages/route-*.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../gateway/config/load.ts';

const UP = 'http://127.0.0.1:1';

function routesOf(routes: unknown[]) {
  return parseConfig({ routes }).config.routes;
}

function problemsOf(routes: unknown[]): readonly string[] {
  try {
    parseConfig({ routes });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('config was accepted');
}

describe('route inheritance', () => {
  const cors = { origins: ['https://app.example.com'] };

  it('a route takes what it does not set from the longest enclosing route, down a chain', () => {
    const [, child, grandchild] = routesOf([
      { prefix: '/v1', upstream: UP, auth: 'none', cache: true, cors, stripPrefix: true },
      { prefix: '/v1/old', deprecation: { at: '2025-06-01' } },
      { prefix: '/v1/old/x', cache: false },
    ]);
    expect(child).toMatchObject({ upstream: UP, auth: 'none', cache: true, cors });
    expect(child?.pathMap).toEqual({ from: '/v1', to: '/' });
    expect(grandchild).toMatchObject({ upstream: UP, auth: 'none', cache: false, cors });
    expect(grandchild?.deprecation).toEqual({ at: '2025-06-01' });
  });

  it('a catch-all is a parent; a route of conditions is nobody parent, but has one of its own prefix', () => {
    const [, conditional, child] = routesOf([
      { prefix: '/', upstream: UP, auth: 'none', cache: true },
      { prefix: '/v1', methods: ['POST'], cache: false },
      { prefix: '/v1/x' },
    ]);
    expect(conditional).toMatchObject({ upstream: UP, auth: 'none', cache: false });
    expect(child).toMatchObject({ upstream: UP, auth: 'none', cache: true });
  });

  it('inherit: false takes the defaults: auth required, no cache, no CORS, its own upstream', () => {
    const [, child] = routesOf([
      { prefix: '/v1', upstream: UP, auth: 'none', cache: true, cors },
      { prefix: '/v1/own', inherit: false, upstream: UP },
    ]);
    expect(child).toMatchObject({ auth: 'required', cache: false });
    expect(child?.cors).toBeUndefined();
    expect(
      problemsOf([
        { prefix: '/v1', upstream: UP },
        { prefix: '/v1/own', inherit: false },
      ]),
    ).toEqual(['routes[1]: needs exactly one of upstream and upstreams, or a parent route that has one']);
  });

  it('own upstreams replace the parent targets, health check included', () => {
    const [, child] = routesOf([
      { prefix: '/v1', upstreams: [{ url: UP }], healthCheck: {} },
      { prefix: '/v1/x', upstream: 'http://127.0.0.1:2' },
    ]);
    expect(child?.upstreams).toBeUndefined();
    expect(child?.upstream).toBe('http://127.0.0.1:2');
  });
});

describe('route keys, refused one line each', () => {
  it.each([
    [
      { prefix: '/a', upstream: UP, stripPrefix: true, rewrite: '/b' },
      'routes[0].rewrite: not with stripPrefix',
    ],
    [{ prefix: '/a', upstream: UP, rewrite: 'b/' }, 'routes[0].rewrite: must match pattern'],
    [{ prefix: '/a', upstream: UP, methods: ['get'] }, 'routes[0].methods[0]: must match pattern'],
    [{ prefix: '/a', upstream: UP, methods: [] }, 'routes[0].methods: must NOT have fewer than 1 items'],
    [{ prefix: '/a', upstream: UP, hosts: ['API.example.com'] }, 'routes[0].hosts[0]: must match pattern'],
    [{ prefix: '/a', upstream: UP, hosts: ['a.*.com'] }, 'routes[0].hosts[0]: must match pattern'],
    [{ prefix: '/a', upstream: UP, headers: { 'x tenant': 'a' } }, 'routes[0].headers'],
    [
      { prefix: '/a', upstream: UP, headers: { 'X-A': '1', 'x-a': '1' } },
      'routes[0].headers: x-a is listed twice',
    ],
    [{ prefix: '/a', upstream: UP, inherit: 'no' }, 'routes[0].inherit: must be boolean'],
  ])('%j: %s', (route, expected) => {
    const problems = problemsOf([route]);
    expect(problems.join('\n')).toContain(expected);
    for (const problem of problems) expect(problem).not.toContain('\n');
  });

  it('two routes of one prefix and the same conditions are a duplicate; other conditions are not', () => {
    expect(
      problemsOf([
        { prefix: '/a', upstream: UP, methods: ['GET', 'POST'] },
        { prefix: '/a', upstream: UP, methods: ['POST', 'GET'] },
        { prefix: '/a', upstream: UP, methods: ['PUT'] },
        { prefix: '/a', upstream: UP },
      ]),
    ).toEqual(['routes[1]: duplicate route: another of prefix /a has the same methods, hosts and headers']);
  });
});

describe('route names', () => {
  it('a route is named by its prefix unless it says otherwise; a name is not inherited', () => {
    const [parent, writes] = routesOf([
      { prefix: '/v1', upstream: UP },
      { prefix: '/v1', methods: ['POST'], name: 'orders-write' },
    ]);
    expect(parent?.name).toBeUndefined();
    expect(writes?.name).toBe('orders-write');
  });

  it('warns at start when unnamed routes of one prefix share its label', () => {
    const warningsOf = (routes: unknown[]) => parseConfig({ routes }).warnings;
    expect(
      warningsOf([
        { prefix: '/v1', upstream: UP, auth: 'required' },
        { prefix: '/v1', methods: ['POST'], auth: 'required' },
      ]),
    ).toEqual([
      'routes[1] shares the label /v1 with routes[0] in metrics, logs and audit records: give one a name',
    ]);
    expect(
      warningsOf([
        { prefix: '/v1', upstream: UP, auth: 'required' },
        { prefix: '/v1', methods: ['POST'], auth: 'required', name: 'writes' },
      ]),
    ).toEqual([]);
  });

  it('refuses a name given twice, or one that is another route’s prefix, at its key path', () => {
    expect(
      problemsOf([
        { prefix: '/v1', upstream: UP },
        { prefix: '/v1', methods: ['POST'], name: 'api' },
        { prefix: '/v2', upstream: UP, name: 'api' },
        { prefix: '/v3', upstream: UP, name: '/v1' },
      ]),
    ).toEqual([
      'routes[2].name: duplicate name api (routes[1] has it): route names label metrics, logs and audit records',
      'routes[3].name: duplicate name /v1 (routes[0] has it): route names label metrics, logs and audit records',
    ]);
    expect(problemsOf([{ prefix: '/v1', upstream: UP, name: 'two words' }]).join('\n')).toContain(
      'routes[0].name: must match pattern',
    );
  });
});

describe('per-route limits by reference', () => {
  const policies = [
    { name: 'everyone', limit: 100, window: '60s' },
    { name: 'reports', scope: 'route', limit: 2, window: '60s' },
  ];
  const problems = (routes: unknown[], list: unknown[] = policies) => {
    try {
      parseConfig({ routes, rateLimits: { policies: list } });
    } catch (error) {
      return (error as ConfigError).problems;
    }
    return [];
  };

  it('a child takes its parent list; a named route policy is accepted', () => {
    const { config } = parseConfig({
      routes: [
        { prefix: '/r', upstream: UP, rateLimits: ['reports'] },
        { prefix: '/r/x', cache: true },
      ],
      rateLimits: { policies },
    });
    expect(config.routes[1]?.rateLimits).toEqual(['reports']);
  });

  it('refuses an unknown name, a policy of scope all, and a route policy no route names', () => {
    expect(problems([{ prefix: '/r', upstream: UP, rateLimits: ['nope', 'everyone'] }])).toEqual([
      'routes[0].rateLimits[0]: no policy named "nope" in rateLimits.policies',
      'routes[0].rateLimits[1]: policy "everyone" counts every request already; give it scope: route',
      'rateLimits.policies[1].scope: no route names "reports" in its rateLimits',
    ]);
  });
});
