/**
 * deploy/kubernetes as `kubectl apply -k` creates it, checked offline (no cluster runs here):
 * every object valid against the Kubernetes schemas (kubernetes-models: the OpenAPI schemas
 * compiled with ajv), every pod within the restricted Pod Security Standard, and rendered by
 * our stand-in exactly as the real kustomize renders it where kubectl is installed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { find, kubernetesObjects, KUSTOMIZE_DIR, read } from './support/deploy-files.ts';
import { kubectlKustomize, type Doc } from './support/kustomize.ts';
import { podViolations, RESTRICTED_RULES, NUMERIC_IDENTITY_RULE } from './support/restricted-pod-security.ts';

const objects = kubernetesObjects();
const pods = objects.filter((d) => d['spec']?.template?.spec !== undefined);

/** The kubernetes-models class of an object, by its apiVersion and kind. */
async function modelOf(doc: Doc): Promise<new (doc: Doc) => { validate(): void }> {
  const [group, version] = String(doc['apiVersion']).includes('/')
    ? String(doc['apiVersion']).split('/')
    : ['', doc['apiVersion']];
  const path = group === '' ? `v1/${doc['kind']}` : `${group}/${version}/${doc['kind']}`;
  const module = (await import(`kubernetes-models/${path}`)) as Record<string, any>;
  return module[doc['kind']];
}

describe('deploy/kubernetes: the objects', () => {
  it('every object is valid against its Kubernetes schema, and the validator refuses a broken one', async () => {
    expect(objects.length).toBeGreaterThan(8);
    for (const doc of objects) {
      const Model = await modelOf(doc);
      expect(() => new Model(doc).validate(), `${doc['kind']} ${doc['metadata']?.name}`).not.toThrow();
    }
    const broken = structuredClone(find(objects, 'Deployment', 'gateway'));
    broken['spec'].replicas = 'two';
    const Model = await modelOf(broken);
    expect(() => new Model(broken).validate()).toThrow(/replicas/);
  });

  it('renders as kubectl kustomize renders it (where kubectl is installed)', (context) => {
    const real = kubectlKustomize(KUSTOMIZE_DIR);
    // kubectl is no package of the machines CI runs on; the stand-in renderer that every other
    // deploy test uses is checked against the real one wherever kubectl exists.
    if (real === undefined) return context.skip('kubectl is not installed here');
    const key = (d: Doc) => `${d['kind']}/${d['metadata'].name}`;
    const sorted = (docs: Doc[]) => [...docs].sort((a, b) => key(a).localeCompare(key(b)));
    expect(sorted(objects)).toEqual(sorted(real));
  });

  it('holds no Secret: each component gets its own, created outside the manifests', () => {
    expect(objects.filter((d) => d['kind'] === 'Secret')).toEqual([]);
    const secretsOf = (name: string) => {
      const pod = find(objects, 'Deployment', name)['spec'].template.spec;
      return new Set<string>(
        [
          ...pod.containers.flatMap((c: Doc) => (c['envFrom'] ?? []).map((e: Doc) => e['secretRef']?.name)),
          ...(pod.volumes ?? []).map((v: Doc) => v['secret']?.secretName),
        ].filter((n) => n !== undefined),
      );
    };
    const gateway = secretsOf('gateway');
    const service = secretsOf('service');
    expect(gateway.size).toBeGreaterThan(0);
    expect(service.size).toBeGreaterThan(0);
    expect([...gateway].filter((n) => service.has(n))).toEqual([]);
  });
});

describe('deploy/kubernetes: restricted Pod Security', () => {
  it('the namespace enforces the restricted standard, and every pod meets it', () => {
    const namespace = objects.find((d) => d['kind'] === 'Namespace');
    expect(namespace?.['metadata'].labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
    expect(pods.length).toBeGreaterThanOrEqual(2);
    for (const workload of pods)
      expect(podViolations(workload['spec'].template.spec), workload['metadata'].name).toEqual([]);
  });

  it('each rule of the table fires on a pod that breaks it', () => {
    const bad: Doc = {
      hostNetwork: true,
      securityContext: { runAsUser: 0, sysctls: [{ name: 'kernel.msgmax', value: '1' }] },
      volumes: [{ name: 'host', hostPath: { path: '/' } }],
      containers: [
        {
          name: 'bad',
          ports: [{ containerPort: 80, hostPort: 80 }],
          securityContext: {
            privileged: true,
            allowPrivilegeEscalation: true,
            capabilities: { add: ['SYS_ADMIN'], drop: ['ALL'] },
            procMount: 'Unmasked',
            windowsOptions: { hostProcess: true },
          },
        },
      ],
    };
    for (const rule of [...RESTRICTED_RULES, NUMERIC_IDENTITY_RULE])
      expect(rule.violations(bad).length, rule.control).toBeGreaterThan(0);
  });

  it("runs as the image's user and group, by number (the Dockerfile's USER)", () => {
    const user = /^USER (\d+):(\d+)$/m.exec(read('deploy/Dockerfile'));
    expect(user, 'the Dockerfile names its USER as uid:gid').not.toBeNull();
    for (const workload of pods) {
      const context = workload['spec'].template.spec.securityContext;
      expect([context.runAsUser, context.runAsGroup], workload['metadata'].name).toEqual([
        Number(user![1]),
        Number(user![2]),
      ]);
    }
  });
});

describe('deploy/kubernetes: the kustomization', () => {
  it('applies the production overlay, which pins every image to a version or digest', () => {
    const top = readFileSync(join(KUSTOMIZE_DIR, 'kustomization.yaml'), 'utf8');
    expect(top).toContain('overlays/production');
    for (const workload of pods)
      for (const container of workload['spec'].template.spec.containers) {
        expect(container.image, container.name).toMatch(/(:\d+\.\d+\.\d+$)|(@sha256:[0-9a-f]{64}$)/);
        expect(container.image).not.toMatch(/:latest$/);
        // The version this checkout builds, until a digest replaces it.
        if (container.image.startsWith('portico:'))
          expect(container.image).toBe(`portico:${JSON.parse(read('package.json')).version}`);
      }
  });
});
