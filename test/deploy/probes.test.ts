/**
 * Every probe of deploy/kubernetes answers on the port it names: the gateway and the service
 * started as their pods run them (support/pod-process.ts: the pods' command, the image's ENV,
 * the pods' env, the Secrets of the example generator as files and variables, the ConfigMap),
 * on this machine's PostgreSQL and Redis, then asked as the kubelet asks. A token of the
 * deployment's issuer then gets a verified answer through the gateway's HTTPS port.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadOrCreateDevIssuer } from '../../gateway/identity/dev-issuer.ts';
import { createScratchDatabase, type ScratchDatabase } from '../support/databases.ts';
import { find, generatedSecrets, kubernetesObjects } from './support/deploy-files.ts';
import type { Doc } from './support/kustomize.ts';
import { POD_IP, runPodContainer, type PodProcess } from './support/pod-process.ts';

const objects = kubernetesObjects();
const generated = generatedSecrets();
const podOf = (name: string) => find(objects, 'Deployment', name)['spec'].template.spec;
let database: ScratchDatabase;
let service: PodProcess;
let gateway: PodProcess;

/** What the kubelet does for one probe: true once it succeeds, polled as a startupProbe. */
async function probeOnce(process: PodProcess, probe: Doc): Promise<boolean> {
  if (probe['httpGet'] !== undefined) {
    const { path, port } = probe['httpGet'];
    try {
      const answer = await request(`http://${POD_IP}:${process.port(port)}${path}`, { headersTimeout: 2000 });
      await answer.body.dump();
      // The kubelet counts 200-399 as success.
      return answer.statusCode >= 200 && answer.statusCode < 400;
    } catch {
      return false;
    }
  }
  if (probe['tcpSocket'] === undefined)
    throw new Error(`only httpGet and tcpSocket probes: ${JSON.stringify(probe)}`);
  const port = process.port(probe['tcpSocket'].port);
  return new Promise((resolve) => {
    const socket = connect(port, POD_IP, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function until(process: PodProcess, probe: Doc, deadlineMs: number): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!(await probeOnce(process, probe))) {
    if (Date.now() > end || process.child.exitCode !== null)
      throw new Error(`probe ${JSON.stringify(probe)} never answered; output:\n${process.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

beforeAll(async () => {
  database = await createScratchDatabase();
  const sources = [...generated.secrets, ...objects.filter((d) => d['kind'] === 'ConfigMap')];
  const shared = { PORTICO_REDIS_PREFIX: `${inject('redisPrefix')}deploy:`, LOG_LEVEL: 'warn' };
  service = await runPodContainer(podOf('service'), {
    sources,
    overrides: { ...shared, DATABASE_URL: database.url },
  });
  await until(service, podOf('service').containers[0].startupProbe, 60_000);
  // The gateways reach the service by its Service's name and port.
  const svc = find(objects, 'Service', 'service')['spec'].ports[0];
  const services = new Map([[`service:${svc.port}`, `localhost:${service.port(svc.targetPort)}`]]);
  gateway = await runPodContainer(podOf('gateway'), {
    sources,
    services,
    overrides: { ...shared, REDIS_URL: inject('redisUrl') },
  });
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  await service?.stop();
  await database?.drop();
  generated.cleanup();
});

describe('deploy/kubernetes: the probes, asked of the real processes', () => {
  it.each(['service', 'gateway'])(
    '%s: startup, readiness and liveness answer on the ports they name',
    async (name) => {
      const process = name === 'gateway' ? gateway : service;
      const container = podOf(name).containers[0];
      await until(process, container.startupProbe, 60_000);
      // Readiness may wait for Redis or the upstream a moment; then both answer at once.
      await until(process, container.readinessProbe, 20_000);
      expect(await probeOnce(process, container.livenessProbe)).toBe(true);
      // One trust setup: nothing of the development defaults (issuer, certificate, CA) was used.
      expect(process.output()).not.toMatch(/development/i);
    },
    90_000,
  );

  it('the admin port scraped by Prometheus serves /metrics on the pod address', async () => {
    const annotations = find(objects, 'Deployment', 'gateway')['spec'].template.metadata.annotations;
    const answer = await request(
      `http://${POD_IP}:${gateway.port(Number(annotations['prometheus.io/port']))}${annotations['prometheus.io/path']}`,
    );
    expect(answer.statusCode).toBe(200);
    expect(await answer.body.text()).toContain('# TYPE');
  });

  it("a token of the deployment's issuer gets a verified answer through the edge certificate", async () => {
    const issuer = loadOrCreateDevIssuer(join(generated.dir, 'issuer'));
    const token = await issuer.sign(
      { sub: 'deploy-check', customer_id: 'deploy-check', scope: 'orders:read' },
      60,
    );
    // The trial certificate's CA, as the generator hands it to clients: trust it, not "anything".
    const ca = readFileSync(join(generated.dir, 'edge-ca.crt'), 'utf8');
    const dispatcher = new Agent({ connect: { ca, servername: 'localhost' } });
    const answer = await request(`https://localhost:${gateway.port('https')}/v1/orders`, {
      headers: { authorization: `Bearer ${token}` },
      dispatcher,
    });
    const body = await answer.body.text();
    await dispatcher.close();
    expect(answer.statusCode, body).toBe(200);
    expect(JSON.parse(body)).toHaveProperty('data');
  });
});
