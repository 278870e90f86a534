import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../gateway/config/load.ts';

const deployDir = new URL('../../deploy/', import.meta.url).pathname;

describe('deploy/', () => {
  it('the shipped gateway config is valid against the schema', () => {
    const { config } = loadConfigFile(`${deployDir}portico.yaml`, {});
    expect(config.routes.map((r) => [r.prefix, r.auth])).toEqual([
      ['/v1', 'required'],
      ['/v1/openapi.json', 'none'],
      ['/v1/docs', 'none'],
    ]);
    expect(config.rateLimits.policies.map((p) => p.name)).toEqual(['default', 'order-writes']);
  });

  it('the compose file and manifests parse, and every variable they set is one Portico reads', () => {
    const known = new Set(
      [
        ...readFileSync(new URL('../../README.md', import.meta.url), 'utf8').matchAll(/`([A-Z][A-Z_]+)`/g),
      ].map((m) => m[1]),
    );
    const compose = parse(readFileSync(`${deployDir}compose.yaml`, 'utf8')) as Record<string, unknown>;
    const manifests = readFileSync(`${deployDir}kubernetes/portico.yaml`, 'utf8')
      .split(/^---$/m)
      .map((doc) => parse(doc) as Record<string, unknown>);
    expect(manifests.map((m) => m['kind'])).toEqual([
      'Secret',
      'Deployment',
      'Service',
      'PodDisruptionBudget',
      'Deployment',
      'Service',
      'PodDisruptionBudget',
    ]);
    const names = [
      ...JSON.stringify(compose).matchAll(/"([A-Z][A-Z_]+)":/g),
      ...JSON.stringify(manifests).matchAll(/"name":"([A-Z][A-Z_]+)"|"([A-Z][A-Z_]+)":"/g),
    ]
      .flatMap((m) => [m[1], m[2]])
      .filter((n): n is string => n !== undefined)
      // The postgres image's own variables.
      .filter((n) => !n.startsWith('POSTGRES_'));
    expect(names.length).toBeGreaterThan(5);
    expect(names.filter((n) => !known.has(n))).toEqual([]);
  });
});
