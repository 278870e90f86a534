/**
 * Loading reports every problem at once, schema and cross-field alike, with the file; the
 * result is frozen; a routes list replaces the defaults; and a reload applies what it can and
 * names what needs a restart instead of claiming it reloaded.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfigFile, parseConfig } from '../../../gateway/config/load.ts';
import type { GatewayConfig } from '../../../gateway/config/schema/gateway.ts';
import { watchConfigFile } from '../../../gateway/config/reload.ts';

const dir = mkdtempSync(join(tmpdir(), 'portico-config-reload-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function refusal(write: string): ConfigError {
  const file = join(dir, `${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, write);
  try {
    loadConfigFile(file, {});
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('config was accepted');
}

describe('loading a config file', () => {
  it('reports schema and cross-field problems together, naming the file', () => {
    const error = refusal(
      [
        'listenr: {}', // schema: unknown key
        'routes:',
        '  - { prefix: /v1, upstream: http://a:1 }',
        '  - { prefix: /v1, upstream: http://b:1 }', // cross-field: duplicate prefix
        'rateLimits:',
        '  policies:',
        '    - { name: default, key: principal, limit: 5, window: 60s }',
        '    - { name: default, key: ip, limit: 9, window: 60s }', // cross-field: duplicate name
        '',
      ].join('\n'),
    );
    expect(error.problems).toEqual(
      expect.arrayContaining([
        'listenr: unknown key',
        'routes[1].prefix: duplicate prefix /v1',
        'rateLimits.policies[1].name: duplicate policy name "default"',
      ]),
    );
    expect(error.message).toMatch(new RegExp(`^invalid gateway config ${error.source}:\\n {2}`));
    expect(error.source).toMatch(/\.yaml$/);
  });

  it('a YAML syntax error keeps the excerpt the parser drew, and a key problem its line', () => {
    const syntax = refusal(['routes:', '  - prefix: /v1', 'upstream http://x', ''].join('\n'));
    // The reason and place on one line (no "(line N)" added: it says it), the excerpt below.
    expect(syntax.message).toMatch(
      /\n {2}\(file\): Implicit map keys need to be followed by map values at line 3, column 1\n {6}- prefix: \/v1\n {4}upstream http:\/\/x\n {4}\^+$/,
    );
    const key = refusal(['routes:', '  - { prefix: /v1, upstream: nope }', ''].join('\n'));
    expect(key.message).toContain('\n  routes[0].upstream: must be a URL (line 2)');
  });

  it('skips the cross-field checks only of a section the schema refused', () => {
    const error = refusal(['routes: 7', 'listener: { tls: { certFile: a.crt } }', ''].join('\n'));
    expect(error.problems).toEqual(
      expect.arrayContaining([
        'routes: must be array',
        'listener.tls: set certFile and keyFile together, or neither',
      ]),
    );
  });

  it('is frozen once loaded', () => {
    const { config } = parseConfig({});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.rateLimits.policies[0])).toBe(true);
    expect(() => {
      (config.routes as { prefix: string }[])[0]!.prefix = '/v2';
    }).toThrow(TypeError);
  });

  it('a routes list replaces the default routes', () => {
    const { config } = parseConfig({ routes: [{ prefix: '/status', upstream: 'http://status:8080' }] });
    expect(config.routes.map((route) => route.prefix)).toEqual(['/status']);
  });
});

describe('reloading a config file', () => {
  function watcher(initial: string) {
    const file = join(dir, `reload-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, initial);
    const lines: Record<string, unknown>[] = [];
    const log = pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line));
          callback();
        },
      }),
    );
    const applied: GatewayConfig[] = [];
    const running = loadConfigFile(file, {}).config;
    const reloader = watchConfigFile(
      file,
      {},
      { log, running, apply: (config) => void applied.push(config) },
    );
    return { file, lines, applied, reloader };
  }
  const policy = (limit: number) => [
    'rateLimits:',
    '  policies:',
    `    - { name: default, key: principal, limit: ${limit}, window: 60s }`,
  ];
  const route = (upstream: string) => ['routes:', `  - { prefix: /v1, upstream: '${upstream}' }`];

  it('applies changed routes, auth and limits, and names by key what needs a restart', async () => {
    const w = watcher([...policy(5), ...route('http://a:1'), ''].join('\n'));
    writeFileSync(
      w.file,
      [
        ...policy(6),
        ...route('http://b:1'),
        'auth: { apiKeys: { enabled: false } }',
        'listener: { hsts: { maxAgeSeconds: 60 } }',
        'cache: { maxBytes: 1048576 }',
        '',
      ].join('\n'),
    );
    const result = await w.reloader.reload('SIGHUP');
    w.reloader.close();
    expect(result).toMatchObject({
      outcome: 'applied',
      applied: ['auth', 'rateLimits', 'routes'],
      needsRestart: ['listener.hsts.maxAgeSeconds', 'cache.maxBytes'],
      problems: [],
    });
    expect(result.message).toMatch(
      /^applied [0-9a-f]{12}: auth, rateLimits, routes; needs a restart: listener.hsts.maxAgeSeconds, cache.maxBytes$/,
    );
    // The pipeline is built with the running values of what needs a restart, the new rest.
    const [built] = w.applied;
    expect(built?.rateLimits.policies[0]?.limit).toBe(6);
    expect(built?.routes[0]?.upstream).toBe('http://b:1');
    expect(built?.listener.hsts.maxAgeSeconds).not.toBe(60);
    expect(built?.cache.maxBytes).not.toBe(10);
    expect(w.lines.find((line) => line['msg'] === 'config reloaded')).toMatchObject({
      applied: ['auth', 'rateLimits', 'routes'],
    });
    const restart = w.lines.find((line) => String(line['msg']).startsWith('config changed: needs a restart'));
    expect(restart).toMatchObject({
      level: 40,
      needsRestart: ['listener.hsts.maxAgeSeconds', 'cache.maxBytes'],
    });
  });

  it('never claims a reload for a change that needs a restart', async () => {
    const w = watcher([...policy(5), ...route('http://a:1'), ''].join('\n'));
    writeFileSync(
      w.file,
      [...policy(5), ...route('http://a:1'), 'admin: { readinessTimeoutMs: 1234 }', ''].join('\n'),
    );
    const result = await w.reloader.reload('file change');
    w.reloader.close();
    expect(w.applied).toEqual([]);
    expect(result).toMatchObject({ outcome: 'unchanged', needsRestart: ['admin.readinessTimeoutMs'] });
    expect(w.lines.some((line) => line['msg'] === 'config reloaded')).toBe(false);
    expect(w.lines.map((line) => line['msg'])).toEqual([
      'config changed: needs a restart to apply: admin.readinessTimeoutMs',
    ]);
  });

  it('refuses a pipeline that cannot be built, with its problem; the next valid file applies', async () => {
    const w = watcher([...policy(5), ...route('http://a:1'), ''].join('\n'));
    let fail = true;
    const reloader = watchConfigFile(
      w.file,
      {},
      {
        log: pino({ level: 'silent' }),
        running: loadConfigFile(w.file, {}).config,
        apply: () => {
          if (fail)
            throw new Error('invalid auth config:\n  auth.jwt.jwksFile: cannot read /x as a JWKS: ENOENT');
        },
      },
    );
    writeFileSync(w.file, [...policy(5), ...route('http://b:1'), ''].join('\n'));
    const refused = await reloader.reload('admin');
    expect(refused).toMatchObject({
      outcome: 'refused',
      problems: ['auth.jwt.jwksFile: cannot read /x as a JWKS: ENOENT'],
    });
    expect(refused.message).toMatch(/^refused [0-9a-f]{12}: the running config stays$/);
    fail = false;
    // Refused means not applied: the same file is still a change to apply.
    expect(await reloader.reload('admin')).toMatchObject({ outcome: 'applied', applied: ['routes'] });
    reloader.close();
    w.reloader.close();
  });

  it('keeps the running config when the file turns bad, logging every problem with the file', async () => {
    const w = watcher([...policy(5), ''].join('\n'));
    writeFileSync(
      w.file,
      ['rateLimits: { policies: [{ name: a, limit: -1 }] }', 'listenr: 1', ''].join('\n'),
    );
    expect((await w.reloader.reload('SIGHUP')).outcome).toBe('refused');
    w.reloader.close();
    expect(w.applied).toEqual([]);
    const refused = w.lines.find(
      (line) => line['msg'] === 'config reload refused; keeping the running config',
    );
    expect(refused).toMatchObject({ file: w.file, level: 50 });
    expect(refused?.['problems']).toEqual(expect.arrayContaining(['listenr: unknown key']));
  });
});
