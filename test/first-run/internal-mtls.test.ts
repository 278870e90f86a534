/**
 * `npm start` with nothing configured: the hop from the gateway to the service is mutual TLS
 * out of the box. The service, reached directly, refuses plain HTTP and a caller without the
 * gateway's certificate at the handshake; the data dir's development CA issued both sides.
 */
import { readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { devPkiFiles } from '../../shared/dev-pki.ts';
import { tlsAgent } from '../support/internal-pki.ts';
import { startPortico, stopProcess } from './support/portico-process.ts';
import type { RunningPortico } from './support/portico-process.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'portico-internal-mtls-'));
let running: RunningPortico | undefined;
afterAll(() => {
  if (running !== undefined && running.child.exitCode === null) running.child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the internal hop of npm start', () => {
  it('is mutual TLS with the development CA of the data dir, and relays', async () => {
    running = await startPortico(dataDir);
    const upstreams = [...running.output().matchAll(/^ {2}Route +\S+ → (\S+)/gm)].map((m) => m[1]);
    expect(upstreams.length).toBeGreaterThan(0);
    for (const upstream of upstreams) expect(upstream).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const service = upstreams[0]!;
    const pki = devPkiFiles(dataDir);
    const ca = readFileSync(pki.caFile, 'utf8');

    // Reached directly: plain HTTP, no certificate, all refused before any HTTP answer.
    await expect(request(`${service.replace('https:', 'http:')}/healthz`)).rejects.toThrow();
    await expect(request(`${service}/healthz`, { dispatcher: tlsAgent(ca) })).rejects.toThrow();
    // With the gateway's client certificate it answers (the health check needs no assertion).
    const gatewayCert = {
      cert: readFileSync(pki.clientCertFile, 'utf8'),
      key: readFileSync(pki.clientKeyFile, 'utf8'),
    };
    const direct = await request(`${service}/healthz`, { dispatcher: tlsAgent(ca, gatewayCert) });
    await direct.body.text();
    expect(direct.statusCode).toBe(200);

    // Through the gateway, over that hop.
    const edge = await request(`${running.url}/v1/orders`, {
      dispatcher: tlsAgent(readFileSync(running.cacert, 'utf8')),
      headers: { authorization: `Bearer ${running.token}` },
    });
    await edge.body.text();
    expect(edge.statusCode).toBe(200);
    expect(await stopProcess(running.child, 'SIGINT')).toBe(0);
  });
});
