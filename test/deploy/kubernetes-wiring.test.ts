/**
 * deploy/kubernetes wired as the processes need it: each component's variables and Secret keys
 * are ones its code reads and each mounted key is used; one trust setup for every gateway
 * (auth.jwt, listener.tls from the Secret, no per-pod state); rollouts and disruptions that
 * keep serving (startupProbe, HTTP probes, preStop, PDB by maxUnavailable, topology spread,
 * HPA); a NetworkPolicy per hop; requests and limits; trustProxy naming whom it trusts.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../gateway/config/load.ts';
import {
  find,
  GATEWAY_VARIABLES,
  generatedSecrets,
  kubernetesObjects,
  read,
  ROOT,
  SERVICE_VARIABLES,
} from './support/deploy-files.ts';
import type { Doc } from './support/kustomize.ts';

const objects = kubernetesObjects();
const generated = generatedSecrets();
afterAll(() => generated.cleanup());
const podOf = (name: string) => find(objects, 'Deployment', name)['spec'].template.spec;
const secretNamed = (name: string) => {
  const secret = generated.secrets.find((s) => s['metadata'].name === name);
  if (secret === undefined) throw new Error(`the generator writes no Secret ${name}`);
  return secret;
};
const keysOf = (secret: Doc) => Object.keys({ ...secret['data'], ...secret['stringData'] });
const gatewayConfigText = () => find(objects, 'ConfigMap', 'portico-gateway')['data']['portico.yaml'];

/** `256Mi` in MiB. */
const mebibytes = (quantity: string) => {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (match === null) throw new Error(`memory quantity ${quantity}: write it in Mi or Gi`);
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
};

/** Every variable a container gets: its env and the keys of the Secrets it takes whole. */
function variablesSet(container: Doc): string[] {
  return [
    ...(container['env'] ?? []).map((e: Doc) => e['name']),
    ...(container['envFrom'] ?? []).flatMap((e: Doc) => keysOf(secretNamed(e['secretRef'].name))),
  ];
}

describe('deploy/kubernetes: variables and Secret keys', () => {
  it.each([
    ['gateway', GATEWAY_VARIABLES],
    ['service', SERVICE_VARIABLES],
  ])('every variable the %s pod gets is one its code reads', (name, read) => {
    const known = read();
    const set = podOf(name).containers.flatMap(variablesSet);
    expect(set.length).toBeGreaterThan(2);
    expect(set.filter((v: string) => !known.has(v))).toEqual([]);
  });

  it('every key of a mounted Secret is a file the process is told to read', () => {
    for (const name of ['gateway', 'service']) {
      const pod = podOf(name);
      const container = pod.containers[0];
      // The files a process reads: paths in its variables and, for the gateway, its config.
      const told = JSON.stringify(container.env ?? []) + (name === 'gateway' ? gatewayConfigText() : '');
      for (const volume of (pod.volumes ?? []).filter((v: Doc) => v['secret'] !== undefined)) {
        const mount = container.volumeMounts.find((m: Doc) => m['name'] === volume['name']);
        expect(mount, `${name}: volume ${volume['name']} is mounted`).toBeDefined();
        const secret = secretNamed(volume['secret'].secretName);
        const items: Doc[] = volume['secret'].items ?? keysOf(secret).map((key) => ({ key, path: key }));
        for (const item of items) {
          expect(keysOf(secret), `${name}: ${secret['metadata'].name} holds ${item['key']}`).toContain(
            item['key'],
          );
          expect(told, `${name} reads ${mount.mountPath}/${item['path']}`).toContain(
            `${mount.mountPath}/${item['path']}`,
          );
        }
        // And every key of that Secret is taken: none sits unused in the pod.
        expect(keysOf(secret).sort()).toEqual(items.map((i) => i['key']).sort());
      }
    }
  });

  it('the generator writes valid Secrets, the gateway and the service sharing only the assertion keys', async () => {
    const { Secret } = await import('kubernetes-models/v1/Secret');
    for (const secret of generated.secrets) expect(() => new Secret(secret as any).validate()).not.toThrow();
    const gateway = keysOf(secretNamed('portico-gateway'));
    const service = keysOf(secretNamed('portico-service'));
    expect(gateway.filter((k) => service.includes(k))).toEqual(['PORTICO_ASSERTION_KEYS']);
    expect(service).not.toContain('PORTICO_APIKEY_SIGNING_KEYS');
    expect(gateway).not.toContain('DATABASE_URL');
  });
});

describe('deploy/kubernetes: one trust setup for every gateway', () => {
  it('the config names its issuer, serves the mounted certificate and trusts no one by default', () => {
    const raw = parse(gatewayConfigText()) as Doc;
    const { config } = parseConfig(raw, { env: {} });
    expect(config.auth.jwt.jwksFile ?? config.auth.jwt.jwksUrl).toBeDefined();
    expect(config.listener.tls.certFile).toBe('/etc/portico/tls/tls.crt');
    expect(config.listener.tls.keyFile).toBe('/etc/portico/tls/tls.key');
    // Behind an L4 load balancer that keeps the client's address: trust no forwarding header.
    expect(raw['proxy']?.trustProxy ?? false).toBe(false);
    expect(find(objects, 'Service', 'gateway')['spec'].externalTrafficPolicy).toBe('Local');
  });

  it('no per-pod state: no data volume holds keys, the admin token comes from the Secret', () => {
    const pod = podOf('gateway');
    expect(
      pod.volumes.filter((v: Doc) => v['emptyDir'] !== undefined || v['persistentVolumeClaim'] !== undefined),
    ).toEqual([]);
    expect(pod.containers[0].envFrom).toEqual([{ secretRef: { name: 'portico-gateway' } }]);
    expect(keysOf(secretNamed('portico-gateway'))).toEqual(
      expect.arrayContaining([
        'PORTICO_ASSERTION_KEYS',
        'PORTICO_APIKEY_SIGNING_KEYS',
        'PORTICO_ADMIN_TOKEN',
      ]),
    );
  });
});

describe('deploy/kubernetes: rollouts and disruptions', () => {
  it('the gateway: HTTP probes on the admin port of the pod address, a startupProbe, a preStop delay', () => {
    const pod = podOf('gateway');
    const container = pod.containers[0];
    const host = container.env.find((e: Doc) => e['name'] === 'ADMIN_HOST');
    expect(host.valueFrom.fieldRef.fieldPath).toBe('status.podIP');
    expect(container.ports.map((p: Doc) => p['name'])).toEqual(expect.arrayContaining(['https', 'admin']));
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      expect(container[probe]?.httpGet?.port, probe).toBe('admin');
      expect(container[probe].exec, probe).toBeUndefined();
    }
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    const pause = Number(container.lifecycle.preStop.exec.command.at(-1));
    const { config } = parseConfig(parse(gatewayConfigText()), { env: {} });
    expect(pause).toBeGreaterThan(0);
    // The endpoints see the pod go before it stops taking connections, and the drain fits in.
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
      pause * 1000 + config.listener.shutdownTimeoutMs,
    );
  });

  it.each(['gateway', 'service'])(
    '%s: a PDB by maxUnavailable, a topology spread, requests and limits',
    (name) => {
      const deployment = find(objects, 'Deployment', name);
      const labels = deployment['spec'].selector.matchLabels;
      const pod = deployment['spec'].template.spec;
      const budget = objects.find(
        (d) =>
          d['kind'] === 'PodDisruptionBudget' &&
          JSON.stringify(d['spec'].selector.matchLabels) === JSON.stringify(labels),
      );
      expect(budget?.['spec'].maxUnavailable).toBe(1);
      expect(budget?.['spec'].minAvailable).toBeUndefined();
      // The gateways' count is the HPA's alone: a replicas field would reset it at every apply.
      const autoscaler = objects.find(
        (d) => d['kind'] === 'HorizontalPodAutoscaler' && d['spec'].scaleTargetRef.name === name,
      );
      if (autoscaler === undefined) expect(deployment['spec'].replicas).toBeGreaterThanOrEqual(2);
      else expect(deployment['spec'].replicas).toBeUndefined();
      const keys = pod.topologySpreadConstraints.map((c: Doc) => c['topologyKey']);
      expect(keys).toEqual(expect.arrayContaining(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']));
      for (const c of pod.topologySpreadConstraints) expect(c.labelSelector.matchLabels).toEqual(labels);
      const { requests, limits } = pod.containers[0].resources;
      expect(Object.keys(requests).sort()).toEqual(['cpu', 'memory']);
      expect(limits.memory).toBeDefined();
      expect(pod.containers[0].startupProbe, `${name} startupProbe`).toBeDefined();
      expect(pod.containers[0].lifecycle?.preStop, `${name} preStop`).toBeDefined();
      if (name !== 'gateway') return;
      // The bench table (npm run bench; docs/performance.md, formerly the README): the gateway's
      // peak RSS under load sits under the request.
      const docs = readdirSync(join(ROOT, 'docs')).filter((file) => file.endsWith('.md'));
      const text = [read('README.md'), ...docs.map((file) => read(`docs/${file}`))].join('\n');
      const rss = /^\| gateway, cache miss .*\|\s*(\d+) \|$/m.exec(text)?.[1];
      expect(rss, 'the bench table states the gateway peak RSS').toBeDefined();
      expect(mebibytes(requests.memory)).toBeGreaterThanOrEqual(Number(rss));
    },
  );

  it('an HPA scales the gateways on CPU, from at least two replicas', () => {
    const hpa = objects.find((d) => d['kind'] === 'HorizontalPodAutoscaler');
    expect(hpa?.['spec'].scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'gateway',
    });
    expect(hpa?.['spec'].minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa?.['spec'].metrics[0].resource.name).toBe('cpu');
  });
});

describe('deploy/kubernetes: network policy', () => {
  const policies = objects.filter((d) => d['kind'] === 'NetworkPolicy');
  const ingressTo = (labels: Doc) =>
    policies.filter((p) => JSON.stringify(p['spec'].podSelector.matchLabels) === JSON.stringify(labels));

  it('only gateways reach the service, only the service reaches PostgreSQL', () => {
    const gatewayLabels = find(objects, 'Deployment', 'gateway')['spec'].selector.matchLabels;
    const serviceLabels = find(objects, 'Deployment', 'service')['spec'].selector.matchLabels;
    const sources = (labels: Doc) =>
      ingressTo(labels).flatMap((p) => p['spec'].ingress.flatMap((rule: Doc) => rule['from'] ?? ['anyone']));
    expect(sources(serviceLabels)).toEqual([{ podSelector: { matchLabels: gatewayLabels } }]);
    const postgres = policies.find((p) => p['metadata'].name === 'postgresql');
    expect(postgres?.['spec'].ingress).toEqual([
      { from: [{ podSelector: { matchLabels: serviceLabels } }], ports: [{ port: 5432, protocol: 'TCP' }] },
    ]);
    for (const p of ingressTo(serviceLabels)) expect(p['spec'].policyTypes).toContain('Ingress');
  });
});
