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
    const reloader = watchConfigFile(file, {}, { log, running, apply: (config) => applied.push(config) });
    return { file, lines, applied, reloader };
  }
  const policy = (limit: number) => [
    'rateLimits:',
    '  policies:',
    `    - { name: default, key: principal, limit: ${limit}, window: 60s }`,
  ];
  const route = (upstream: string) => ['routes:', `  - { prefix: /v1, upstream: '${upstream}' }`];

  it('applies changed rate limits and names the sections that need a restart', () => {
    const w = watcher([...policy(5), ...route('http://a:1'), ''].join('\n'));
    writeFileSync(
      w.file,
      [...policy(6), ...route('http://b:1'), 'auth: { apiKeys: { enabled: false } }', ''].join('\n'),
    );
    w.reloader.reload('SIGHUP');
    w.reloader.close();
    expect(w.applied.map((config) => config.rateLimits.policies[0]?.limit)).toEqual([6]);
    expect(w.lines.find((line) => line['msg'] === 'config reloaded')).toMatchObject({
      applied: ['rateLimits'],
    });
    const restart = w.lines.find((line) => String(line['msg']).startsWith('config changed: needs a restart'));
    expect(restart).toMatchObject({ level: 40, needsRestart: ['routes', 'auth'] });
  });

  it('never claims a reload for a change that needs a restart', () => {
    const w = watcher([...policy(5), ...route('http://a:1'), ''].join('\n'));
    writeFileSync(w.file, [...policy(5), ...route('http://b:1'), ''].join('\n'));
    w.reloader.reload('file change');
    w.reloader.close();
    expect(w.applied).toEqual([]);
    expect(w.lines.some((line) => line['msg'] === 'config reloaded')).toBe(false);
    expect(w.lines.map((line) => line['msg'])).toEqual(['config changed: needs a restart to apply: routes']);
  });

  it('keeps the running config when the file turns bad, logging every problem with the file', () => {
    const w = watcher([...policy(5), ''].join('\n'));
    writeFileSync(
      w.file,
      ['rateLimits: { policies: [{ name: a, limit: -1 }] }', 'listenr: 1', ''].join('\n'),
    );
    w.reloader.reload('SIGHUP');
    w.reloader.close();
    expect(w.applied).toEqual([]);
    const refused = w.lines.find(
      (line) => line['msg'] === 'config reload refused; keeping the running config',
    );
    expect(refused).toMatchObject({ file: w.file, level: 50 });
    expect(refused?.['problems']).toEqual(expect.arrayContaining(['listenr: unknown key']));
  });
});
