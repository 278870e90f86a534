/**
 * The deployment files kept true: every Kubernetes manifest is a valid object of its kind
 * (kubernetes-models: the Kubernetes OpenAPI schemas compiled with ajv), the gateway pods are
 * probed on /readyz and /healthz, stop later than they drain and request at least the memory
 * the bench measured, every Deployment has a PodDisruptionBudget, the compose file's Redis
 * Cluster profile is whole, and every variable either file sets is one the processes read.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../gateway/config/load.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
type Doc = Record<string, any>;

const manifests = parseAllDocuments(read('deploy/kubernetes/portico.yaml')).map((doc) => doc.toJS() as Doc);
// merge: the file shares its gateway and node settings with YAML merge keys (<<).
const compose = parse(read('deploy/compose.yaml'), { merge: true }) as Doc;
const MODELS: Record<string, new (doc: Doc) => { validate(): void }> = {
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};
const validate = (doc: Doc) => {
  const Model = MODELS[`${doc['apiVersion']}/${doc['kind']}`];
  if (Model === undefined)
    throw new Error(`no model for ${doc['apiVersion']} ${doc['kind']}: add it to MODELS`);
  new Model(doc).validate();
};
const byKind = (kind: string, name: string) =>
  manifests.find((doc) => doc['kind'] === kind && doc['metadata']?.name === name);

/** Upper-case string literals of the processes' sources: every variable they can read. */
function variablesRead(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (path.endsWith('.ts'))
        for (const match of read(path).matchAll(/['"`]([A-Z][A-Z0-9]*_[A-Z0-9_]+)['"`]/g))
          names.add(match[1]!);
    }
  };
  for (const dir of ['gateway', 'resource-service', 'shared']) walk(dir);
  return names;
}

/** `256Mi` in MiB. */
const mebibytes = (quantity: string) => {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (match === null) throw new Error(`memory quantity ${quantity}: write it in Mi or Gi`);
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
};

describe('deploy/kubernetes/portico.yaml', () => {
  it('every document is a valid object of its kind, and the validator refuses a broken one', () => {
    expect(manifests.length).toBeGreaterThan(4);
    for (const doc of manifests)
      expect(() => validate(doc), `${doc['kind']} ${doc['metadata']?.name}`).not.toThrow();
    const broken = structuredClone(byKind('Deployment', 'gateway')!);
    broken['spec'].replicas = 'two';
    expect(() => validate(broken)).toThrow(/replicas/);
  });

  it('gateway pods: probes on /readyz and /healthz, a grace period above the drain, memory from the bench', () => {
    const gateway = byKind('Deployment', 'gateway')!;
    const pod = gateway['spec'].template.spec;
    const container = pod.containers[0];
    expect(JSON.stringify(container.readinessProbe)).toContain('/readyz');
    expect(JSON.stringify(container.livenessProbe)).toContain('/healthz');
    const { config } = loadConfigFile(join(ROOT, 'deploy/portico.yaml'), {});
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(config.listener.shutdownTimeoutMs);
    // The README's bench table: the gateway's peak RSS under load.
    const rss = /^\| gateway, cache miss .*\|\s*(\d+) \|$/m.exec(read('README.md'))?.[1];
    expect(rss, 'the README states the gateway peak RSS in its bench table').toBeDefined();
    expect(mebibytes(container.resources.requests.memory)).toBeGreaterThanOrEqual(Number(rss));
  });

  it('every Deployment has a PodDisruptionBudget selecting its pods', () => {
    for (const deployment of manifests.filter((doc) => doc['kind'] === 'Deployment')) {
      const labels = deployment['spec'].selector.matchLabels;
      const budget = manifests.find(
        (doc) =>
          doc['kind'] === 'PodDisruptionBudget' &&
          JSON.stringify(doc['spec'].selector.matchLabels) === JSON.stringify(labels),
      );
      expect(budget, deployment['metadata'].name).toBeDefined();
      expect(budget!['spec'].minAvailable).toBeGreaterThanOrEqual(1);
      expect(budget!['spec'].minAvailable).toBeLessThan(deployment['spec'].replicas);
    }
  });
});

describe('deploy/compose.yaml', () => {
  it('gateways wait for /readyz and stop later than they drain; the redis-cluster profile is whole', () => {
    const services = compose['services'] as Record<string, Doc>;
    const gateways = Object.entries(services).filter(([name]) => name.startsWith('gateway'));
    expect(gateways.length).toBe(3);
    for (const [name, gateway] of gateways) {
      expect(JSON.stringify(gateway['healthcheck']), name).toContain('/readyz');
      expect(Number(/^(\d+)s$/.exec(gateway['stop_grace_period'])?.[1]) * 1000, name).toBeGreaterThan(25_000);
    }
    // Every name a service depends on is a service of the file.
    for (const [name, service] of Object.entries(services)) {
      const needs = Array.isArray(service['depends_on'])
        ? service['depends_on']
        : Object.keys(service['depends_on'] ?? {});
      for (const needed of needs)
        expect(Object.keys(services), `${name} depends on ${needed}`).toContain(needed);
    }
    const cluster = services['gateway-cluster']!;
    expect(cluster['environment']['REDIS_URL']).toBeUndefined();
    for (const seed of String(cluster['environment']['REDIS_CLUSTER_NODES']).split(',')) {
      expect(Object.keys(services)).toContain(seed.split(':')[0]);
      expect(services[seed.split(':')[0]!]!['profiles']).toEqual(['redis-cluster']);
    }
  });
});

describe('deploy/', () => {
  it('every variable the compose file and the manifests set is one the processes read', () => {
    const known = variablesRead();
    const set = [
      ...JSON.stringify(compose).matchAll(/"([A-Z][A-Z0-9_]+)":/g),
      ...JSON.stringify(manifests).matchAll(/"name":"([A-Z][A-Z0-9_]+)"|"([A-Z][A-Z0-9_]+)":"/g),
    ]
      .flatMap((m) => [m[1], m[2]])
      .filter((n): n is string => n !== undefined)
      // The postgres image's own variables.
      .filter((n) => !n.startsWith('POSTGRES_'));
    expect(set).toEqual(expect.arrayContaining(['REDIS_URL', 'REDIS_CLUSTER_NODES', 'GATEWAY_WORKERS']));
    expect(set.filter((n) => !known.has(n))).toEqual([]);
  });
});
