/**
 * The gateway configs deploy/ ships (compose's and the Kubernetes ConfigMap's) are valid
 * against the gateway's schema, and every variable the deployment files set is documented.
 * Moved from test/gateway/deploy-config.test.ts when the manifests became a kustomization.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../gateway/config/load.ts';
import { composeFile, find, kubernetesObjects, read, ROOT } from './support/deploy-files.ts';
import type { Doc } from './support/kustomize.ts';

const objects = kubernetesObjects();

describe('deploy/: the shipped configs', () => {
  it.each(['deploy/portico.yaml', 'deploy/kubernetes/base/portico.yaml'])(
    '%s is valid against the schema',
    (file) => {
      const { config } = loadConfigFile(join(ROOT, file), {});
      expect(config.routes.map((r) => [r.prefix, r.auth])).toEqual([
        ['/v1', 'required'],
        ['/v1/openapi.json', 'none'],
        ['/v1/docs', 'none'],
      ]);
      expect(config.rateLimits.policies.map((p) => p.name)).toEqual(['default', 'order-writes']);
    },
  );

  it('the ConfigMap holds the base config as it is', () => {
    expect(find(objects, 'ConfigMap', 'portico-gateway')['data']['portico.yaml']).toBe(
      read('deploy/kubernetes/base/portico.yaml'),
    );
  });

  it('every variable the compose file and the manifests set is documented', () => {
    const docs = [
      read('README.md'),
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => read(`docs/${f}`)),
    ];
    const known = new Set(docs.flatMap((text) => [...text.matchAll(/`([A-Z][A-Z_]+)`/g)].map((m) => m[1])));
    const compose = composeFile();
    const pods = objects.filter((d) => d['spec']?.template?.spec !== undefined);
    const names = [
      ...Object.values(compose['services'] as Record<string, Doc>).flatMap((s) =>
        Object.keys(s['environment'] ?? {}),
      ),
      ...pods.flatMap((p) =>
        p['spec'].template.spec.containers.flatMap((c: Doc) => (c['env'] ?? []).map((e: Doc) => e['name'])),
      ),
    ]
      // The postgres image's own variables.
      .filter((n) => !n.startsWith('POSTGRES_'));
    expect(names.length).toBeGreaterThan(5);
    expect(names.filter((n) => !known.has(n))).toEqual([]);
  });
});
