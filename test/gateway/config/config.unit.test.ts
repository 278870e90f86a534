/**
 * Config validation: defaults fill what a file does not name, and every bad key is
 * reported with its path, all at once.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  configReference,
  loadConfig,
  loadConfigFile,
  parseConfig,
} from '../../../gateway/config/load.ts';

/** Every config file of this file's tests lives here, removed at the end. */
const scratch = mkdtempSync(join(tmpdir(), 'portico-config-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function problemsOf(input: unknown): readonly string[] {
  try {
    parseConfig(input);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('config was accepted');
}

describe('gateway config', () => {
  it('built-in defaults: /v1 to the resource service on SERVICE_PORT, auth required, its OpenAPI public', () => {
    const { config, warnings } = parseConfig({}, { env: { SERVICE_PORT: '9999' } });
    expect(config.routes).toEqual([
      { prefix: '/v1', upstream: 'https://127.0.0.1:9999', auth: 'required', cache: true },
      { prefix: '/v1/openapi.json', upstream: 'https://127.0.0.1:9999', auth: 'none', cache: true },
      { prefix: '/v1/docs', upstream: 'https://127.0.0.1:9999', auth: 'none', cache: true },
    ]);
    // Mutual TLS to it with the data dir's development CA (issue 18).
    expect(config.proxy.upstreamTls).toEqual([
      {
        origin: 'https://127.0.0.1:9999',
        caFile: join('.portico', 'tls', 'internal', 'ca.crt'),
        certFile: join('.portico', 'tls', 'internal', 'gateway-client.crt'),
        keyFile: join('.portico', 'tls', 'internal', 'gateway-client.key'),
      },
    ]);
    expect(config.listener.limits).toMatchObject({ maxHeaderBytes: 16384, maxBodyBytes: 1048576 });
    expect(config.listener.shutdownTimeoutMs).toBe(25000);
    expect(config.listener.httpRedirect.enabled).toBe(false);
    expect(config.proxy.trustProxy).toBe(false);
    expect(warnings).toEqual([
      'route /v1/openapi.json has auth: none; requests to it are forwarded without authentication',
      'route /v1/docs has auth: none; requests to it are forwarded without authentication',
    ]);
  });

  it('a file with only rateLimits keeps the default /v1 route, and the issue example is accepted as is', () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const file = join(dir, 'portico.yaml');
    writeFileSync(
      file,
      [
        'rateLimits:',
        '  onStoreFailure: memory        # memory | allow | deny',
        '  policies:',
        '    - name: default',
        '      key: principal            # principal | customer | apiKey | ip',
        '      limit: 600',
        '      window: 60s',
        '    - name: order-writes',
        '      match: { methods: [POST, PUT, PATCH, DELETE], path: /v1/orders }',
        '      key: customer',
        '      limit: 30',
        '      window: 60s',
        '',
      ].join('\n'),
    );
    const { config } = loadConfig({ PORTICO_CONFIG: file });
    expect(config.routes.map((r) => r.prefix)).toEqual(['/v1', '/v1/openapi.json', '/v1/docs']);
    expect(config.rateLimits.policies.map((p) => [p.name, p.key, p.limit])).toEqual([
      ['default', 'principal', 600],
      ['order-writes', 'customer', 30],
    ]);
    // newCredentials: the budget of new credentials verified once the limit is reached (7f02c50).
    expect(config.rateLimits.authFailures).toEqual({ limit: 20, window: '60s', newCredentials: 600 });
  });

  it('reports every bad rate-limit key by its path', () => {
    expect(() =>
      parseConfig({
        rateLimits: {
          onStoreFailure: 'sometimes',
          policies: [{ name: 'x y', key: 'user', limit: 0, window: '1w' }],
        },
      }),
    ).toThrow(
      expect.objectContaining({
        problems: expect.arrayContaining([
          expect.stringMatching(/^rateLimits\.onStoreFailure: must be one of/),
          expect.stringMatching(/^rateLimits\.policies\[0\]\.name:/),
          expect.stringMatching(/^rateLimits\.policies\[0\]\.key: must be one of/),
          expect.stringMatching(/^rateLimits\.policies\[0\]\.limit:/),
          expect.stringMatching(/^rateLimits\.policies\[0\]\.window/),
        ]),
      }),
    );
  });

  it('a route gets auth required unless none is written, and none is warned about', () => {
    const { config, warnings } = parseConfig({
      routes: [
        { prefix: '/v1', upstream: 'http://127.0.0.1:1' },
        { prefix: '/public', upstream: 'http://127.0.0.1:2', auth: 'none', cache: true },
      ],
    });
    expect(config.routes.map((r) => [r.auth, r.cache])).toEqual([
      ['required', false],
      ['none', true],
    ]);
    expect(warnings).toEqual([expect.stringContaining('/public has auth: none')]);
  });

  it('reports every bad key by its path, in one error', () => {
    const problems = problemsOf({
      listenr: {},
      listener: { limits: { maxBodyBytes: -1, maxHeaderBytes: 'big' }, tls: { certFile: 'a.pem' } },
      routes: [
        { prefix: '/v1', upstream: 'not a url' },
        { prefix: 'v2/', upstream: 'ftp://x', auth: 'sometimes' },
        { upstream: 'http://h:1', extra: true },
      ],
      proxy: { retries: 9 },
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        'listenr: unknown key',
        'listener.limits.maxBodyBytes: must be >= 0',
        'listener.limits.maxHeaderBytes: must be integer',
        'routes[0].upstream: must be a URL',
        'routes[1].prefix: must match pattern "^(/|(/[A-Za-z0-9._~-]+)+)$"',
        'routes[1].auth: must be one of required, none',
        'routes[2].prefix: is required',
        'routes[2].extra: unknown key',
        'proxy.retries: must be <= 3',
      ]),
    );
  });

  it('checks what the schema cannot: upstream scheme and path, duplicate prefixes, cert and key together', () => {
    expect(
      problemsOf({
        routes: [
          { prefix: '/v1', upstream: 'ftp://127.0.0.1' },
          { prefix: '/v1', upstream: 'http://127.0.0.1:1/base' },
        ],
      }),
    ).toEqual([
      'routes[0].upstream: must be an http: or https: URL',
      'routes[1].prefix: duplicate prefix /v1',
      'routes[1].upstream: must be an origin only (scheme, host, port)',
    ]);
    expect(problemsOf({ listener: { tls: { certFile: 'a.pem' } } })).toEqual([
      'listener.tls: set certFile and keyFile together, or neither',
    ]);
  });

  it('loads YAML from PORTICO_CONFIG, resolving certificate paths against the file', () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const file = join(dir, 'gateway.yaml');
    writeFileSync(
      file,
      'listener:\n  tls: { certFile: tls/cert.pem, keyFile: /abs/key.pem }\nroutes:\n  - prefix: /v1\n    upstream: http://svc:8081\n',
    );
    const { config } = loadConfig({ PORTICO_CONFIG: file });
    expect(config.listener.tls).toEqual({
      certFile: join(dir, 'tls/cert.pem'),
      keyFile: '/abs/key.pem',
      requestClientCertificates: false,
    });
    expect(config.routes[0]?.upstream).toBe('http://svc:8081');
  });

  it('reports a file that is not YAML', () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'routes: [\n');
    expect(() => loadConfigFile(file)).toThrow(ConfigError);
  });
});

describe('docs/gateway-config.md', () => {
  it('holds the reference generated from the schemas', () => {
    const doc = readFileSync(new URL('../../../docs/gateway-config.md', import.meta.url), 'utf8');
    const generated = doc.split('<!-- reference:start -->')[1]?.split('<!-- reference:end -->')[0]?.trim();
    // Prettier aligns the table's columns; compare cell by cell.
    const cells = (table: string | undefined) =>
      (table ?? '').split('\n').map((row) =>
        row
          .split(/(?<!\\)\|/)
          .map((cell) => cell.trim().replace(/^-+$/, '---'))
          .join('|'),
      );
    expect(cells(generated)).toEqual(cells(configReference()));
  });
});
