/**
 * The admin listener's reads that say more than "alive" (/readyz with internal upstream URLs,
 * /metrics with per-customer counters) are refused to a Host naming another server: a page
 * that rebinds its DNS name to 127.0.0.1 would otherwise read them from the operator's
 * browser. Loopback names, the listener's own address and the names in `admin.allowedHosts`
 * (Prometheus scraping by a DNS name) are served; /healthz stays open to any probe.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let upstream: RecordingUpstream;
let plain: TestGateway;
let listed: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    res.end('{}');
  });
  plain = await startTestGateway(upstream.url);
  listed = await startTestGateway(upstream.url, {
    admin: { allowedHosts: ['portico.monitoring.svc', 'scrape.example:9999'] },
  });
});
afterAll(async () => {
  await plain?.close();
  await listed?.close();
  await upstream?.close();
});

/** A GET of the admin listener at 127.0.0.1 with this Host, as a rebinding page's request arrives. */
function getWithHost(
  gw: TestGateway,
  path: string,
  host: string,
): Promise<{ status: number; type: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: gw.gateway.addresses.admin.port, path, headers: { host } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }),
        );
      },
    );
    req.once('error', reject);
    req.end();
  });
}

describe('admin reads and the Host they name', () => {
  it('refuses /metrics and /readyz to a foreign Host (DNS rebinding) with a problem', async () => {
    for (const path of ['/metrics', '/readyz']) {
      for (const host of [
        'attacker.example',
        'attacker.example:80',
        `rebind.example:${plain.gateway.addresses.admin.port}`,
      ]) {
        const answer = await getWithHost(plain, path, host);
        expect([answer.status, answer.type], `${path} ${host}`).toEqual([403, 'application/problem+json']);
        const problem = JSON.parse(answer.body) as { code: string; detail: string };
        expect(problem.code).toBe('ERR_FORBIDDEN');
        expect(problem.detail).toMatch(/admin\.allowedHosts/);
        expect(answer.body).not.toContain(upstream.url);
      }
    }
  });

  it('serves them to loopback names and the listener address', async () => {
    const port = plain.gateway.addresses.admin.port;
    for (const path of ['/metrics', '/readyz']) {
      for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, 'localhost', '127.0.0.1']) {
        expect((await getWithHost(plain, path, host)).status, `${path} ${host}`).toBe(200);
      }
    }
  });

  it('serves them to the names of admin.allowedHosts, on the port an entry names', async () => {
    const port = listed.gateway.addresses.admin.port;
    for (const host of ['portico.monitoring.svc', `PORTICO.monitoring.svc:${port}`, 'scrape.example:9999']) {
      expect((await getWithHost(listed, '/metrics', host)).status, host).toBe(200);
    }
    expect((await getWithHost(listed, '/metrics', 'scrape.example:9090')).status).toBe(403);
    expect((await getWithHost(listed, '/readyz', 'attacker.example')).status).toBe(403);
  });

  it('keeps /healthz open to any Host (probes)', async () => {
    expect((await getWithHost(plain, '/healthz', 'attacker.example')).status).toBe(200);
  });
});
