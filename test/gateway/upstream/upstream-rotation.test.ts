/**
 * Rotating the internal CA without downtime, as the README tells operators to: (1) the new CA
 * is added beside the old one in both trust files, (2) the service's and the gateway's
 * certificates are replaced by ones from the new CA, (3) the old CA is dropped. The service
 * reloads on SIGHUP (reloadCertificates); the gateway re-reads its files when they change.
 * Requests run through the gateway the whole time, and every one is answered 200.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../support/service.ts';
import { createTestPki, tlsAgent, type TestPki } from '../../support/internal-pki.ts';
import { sleep, startTestGateway, type TestGateway } from '../support/harness.ts';

let oldCa: TestPki;
let newCa: TestPki;
let svc: TestService;
let gw: TestGateway;
/** The files as an operator deploys them: one name each, contents replaced in place. */
let files: { trust: string; serviceCert: string; serviceKey: string; clientCert: string; clientKey: string };

/** Writes whole files only (a rename), as a careful operator or a Kubernetes secret does. */
function put(file: string, text: string): void {
  writeFileSync(`${file}.new`, text, { mode: 0o600 });
  renameSync(`${file}.new`, file);
}

beforeAll(async () => {
  oldCa = await createTestPki('old-ca');
  newCa = await createTestPki('new-ca', oldCa.dir);
  const at = (name: string) => join(oldCa.dir, name);
  files = {
    trust: at('trust.pem'),
    serviceCert: at('service.crt'),
    serviceKey: at('service.key'),
    clientCert: at('gateway.crt'),
    clientKey: at('gateway.key'),
  };
  put(files.trust, oldCa.ca.cert);
  put(files.serviceCert, oldCa.server.cert);
  put(files.serviceKey, oldCa.server.key);
  put(files.clientCert, oldCa.client.cert);
  put(files.clientKey, oldCa.client.key);
  svc = await startTestService({
    tls: { certFile: files.serviceCert, keyFile: files.serviceKey, clientCaFile: files.trust },
  });
  gw = await startTestGateway(svc.url, {
    // The bursts below send as many requests as the gateway answers in their time: the default
    // 600 a minute would refuse some of them on a fast run, and limits are not what this tests.
    rateLimits: { policies: [{ name: 'default', key: 'principal', limit: 1_000_000, window: '60s' }] },
    proxy: {
      upstreamTls: [
        { origin: svc.url, caFile: files.trust, certFile: files.clientCert, keyFile: files.clientKey },
      ],
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await svc?.close();
});

async function call(): Promise<number> {
  try {
    const res = await request(`${gw.origin}/v1/openapi.json`, { dispatcher: gw.agent });
    await res.body.text();
    return res.statusCode;
  } catch {
    return 0;
  }
}

/**
 * Bursts of requests through the gateway until `stop` resolves; their statuses. Each burst is
 * one request wider than the last, so the gateway's pool keeps opening connections, each a
 * full handshake with whatever files are in place at that moment (kept-alive connections
 * alone would never show a rotation).
 */
async function traffic(stop: Promise<void>): Promise<number[]> {
  const statuses: number[] = [];
  let done = false;
  void stop.then(() => (done = true));
  for (let width = 1; !done; width++) {
    statuses.push(...(await Promise.all(Array.from({ length: width }, call))));
    await sleep(5);
  }
  return statuses;
}

/** Whether the service lets a caller with this client certificate in. */
async function serviceAccepts(client: { cert: string; key: string }): Promise<boolean> {
  const agent = tlsAgent(`${oldCa.ca.cert}${newCa.ca.cert}`, client);
  try {
    const res = await request(`${svc.url}/healthz`, { dispatcher: agent });
    await res.body.text();
    return res.statusCode === 200;
  } catch {
    return false;
  } finally {
    await agent.close();
  }
}

describe('rotating the internal CA', () => {
  it('adds the new CA, replaces the certificates, drops the old CA, and every request is answered', async () => {
    let step!: () => void;
    const steps = (async () => {
      await sleep(150);
      // 1. Both CAs trusted, on both sides.
      put(files.trust, `${oldCa.ca.cert}${newCa.ca.cert}`);
      svc.service.reloadCertificates();
      await sleep(150);
      // 2. New certificates: the service's (SIGHUP), then the gateway's client certificate.
      put(files.serviceCert, newCa.server.cert);
      put(files.serviceKey, newCa.server.key);
      svc.service.reloadCertificates();
      await sleep(100);
      put(files.clientCert, newCa.client.cert);
      put(files.clientKey, newCa.client.key);
      await sleep(150);
      // 3. The old CA goes.
      put(files.trust, newCa.ca.cert);
      svc.service.reloadCertificates();
      await sleep(150);
    })().then(() => step());
    const statuses = await traffic(new Promise<void>((resolve) => (step = resolve)));
    await steps;

    expect(statuses.length).toBeGreaterThan(20);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    // The old CA is really gone at the service, and the gateway, on a new connection, got in.
    expect(await serviceAccepts(oldCa.client)).toBe(false);
    expect(await serviceAccepts(newCa.client)).toBe(true);
    expect(await Promise.all(Array.from({ length: 60 }, call))).toEqual(Array(60).fill(200));
  });
});
