/**
 * The admin listener's default port is not one a Prometheus setup takes: 9090 is Prometheus's
 * own (and 9091-9094 its Pushgateway and Alertmanager), where a scraper beside the gateway
 * would clash with it. Every place that names the port (the code's default, the manifests,
 * the compose health check, the docs' table) says the same one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ADMIN_PORT, readGatewayEnvironment } from '../../gateway/environment.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

type Doc = any;
const docs = (path: string): Doc[] => parseAllDocuments(read(path)).map((doc) => doc.toJS());

describe('the admin port', () => {
  it('defaults to a port outside Prometheus’s own 9090-9094', () => {
    expect(readGatewayEnvironment({}).adminPort).toBe(DEFAULT_ADMIN_PORT);
    expect(DEFAULT_ADMIN_PORT < 9090 || DEFAULT_ADMIN_PORT > 9094).toBe(true);
  });

  it('is the one the Kubernetes manifests, the compose health check and the docs name', () => {
    const [deployment] = docs('deploy/kubernetes/base/gateway.yaml').filter((d) => d?.kind === 'Deployment');
    const template = deployment.spec.template;
    const container = template.spec.containers[0];
    const env = Object.fromEntries(container.env.map((e: Doc) => [e.name, e.value]));
    expect(Number(env['ADMIN_PORT'])).toBe(DEFAULT_ADMIN_PORT);
    expect(container.ports.find((p: Doc) => p.name === 'admin').containerPort).toBe(DEFAULT_ADMIN_PORT);
    expect(Number(template.metadata.annotations['prometheus.io/port'])).toBe(DEFAULT_ADMIN_PORT);
    const [policy] = docs('deploy/kubernetes/base/network-policy.yaml').filter(
      (d) => d?.metadata?.name === 'gateway',
    );
    const ports = policy.spec.ingress.flatMap((rule: Doc) => rule.ports.map((p: Doc) => p.port));
    expect(ports).toContain(DEFAULT_ADMIN_PORT);
    expect(read('deploy/compose.yaml')).toContain(`http://127.0.0.1:${DEFAULT_ADMIN_PORT}/readyz`);
    expect(read('docs/configuration.md')).toMatch(
      new RegExp(`\\| \`ADMIN_PORT\` +\\| ${DEFAULT_ADMIN_PORT} `),
    );
    for (const path of ['README.md', 'docs/operations.md', 'docs/deployment.md', 'deploy/Dockerfile'])
      expect(read(path), path).not.toMatch(/\b9090\b/);
  });
});
