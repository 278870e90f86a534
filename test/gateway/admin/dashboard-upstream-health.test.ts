/**
 * The dashboard's upstream health comes from a path each route may set (`healthPath`), or from
 * none (`healthPath: false`): an upstream that is no Portico service has no `/healthz`, and
 * was shown red while `/readyz` said ready. Without the key, the route's `healthCheck.path`,
 * else `/healthz` (the resource service's, which checks PostgreSQL).
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let service: RecordingUpstream;
let pinged: RecordingUpstream;
let silent: RecordingUpstream;
let gw: TestGateway;
beforeAll(async () => {
  [service, pinged, silent] = await Promise.all([
    startRecordingUpstream(),
    startRecordingUpstream(),
    startRecordingUpstream(),
  ]);
  gw = await startTestGateway(service.url, {
    routes: [
      { prefix: '/v1', upstream: service.url, auth: 'none' },
      { prefix: '/other', upstream: pinged.url, auth: 'none', healthPath: '/ping' },
      { prefix: '/outside', upstream: silent.url, auth: 'none', healthPath: false },
    ],
  });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([service, pinged, silent].map((upstream) => upstream?.close()));
});

describe('the dashboard’s upstream health', () => {
  it('fetches each route’s healthPath, /healthz by default, nothing for false', async () => {
    const response = await request(`${gw.adminOrigin}/dashboard.json`);

    const snapshot = (await response.body.json()) as { health: { name: string; ok: boolean }[] };
    const names = snapshot.health.map((check) => check.name);
    expect(names).toContain(`${service.url}/healthz`);
    expect(names).toContain(`${pinged.url}/ping`);
    expect(names.filter((name) => name.startsWith(pinged.url) && name.endsWith('/healthz'))).toEqual([]);
    expect(names.filter((name) => name.startsWith(silent.url) && !name.startsWith('upstream '))).toEqual([]);
    expect(pinged.records.map((record) => record.url)).toContain('/ping');
    expect(silent.records).toEqual([]);
  });

  it('refuses a healthPath that is no path', () => {
    return expect(
      startTestGateway(service.url, {
        routes: [{ prefix: '/v1', upstream: service.url, auth: 'none', healthPath: 'ping' }],
      }),
    ).rejects.toThrow(/routes\[0\]\.healthPath/);
  });
});
