/**
 * A route's `name` is its label wherever the gateway tells of a request: two routes of one
 * prefix (a POST-only route beside its parent) are told apart in /metrics, the request log
 * line and the audit record; a route without a name is labelled by its prefix.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  auditRecordOf,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'portico-route-name-'));
const auditLogPath = join(dir, 'audit.log');
let upstream: RecordingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(
    upstream.url,
    {
      routes: [
        { prefix: '/v1', upstream: upstream.url, auth: 'none' },
        { prefix: '/v1', methods: ['POST'], name: 'orders-write' },
      ],
    },
    { auditLogPath },
  );
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function send(method: 'GET' | 'POST'): Promise<string> {
  const response = await request(`${gw.origin}/v1/orders`, {
    method,
    dispatcher: gw.agent,
    ...(method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : {}),
  });
  await response.body.dump();
  expect(response.statusCode).toBe(200);
  return String(response.headers['x-request-id']);
}

describe('route names', () => {
  it('label the metrics, the request line and the audit record of their own route only', async () => {
    const read = await send('GET');
    const write = await send('POST');
    for (const [id, route] of [
      [read, '/v1'],
      [write, 'orders-write'],
    ] as const) {
      const line = gw.logs.find((entry) => entry['msg'] === 'request' && entry['requestId'] === id);
      expect(line).toMatchObject({ path: '/v1/orders', route });
      expect(await auditRecordOf(auditLogPath, id)).toMatchObject({ path: '/v1/orders', route });
    }
    const metrics = await (await request(`${gw.adminOrigin}/metrics`)).body.text();
    expect(metrics).toMatch(/portico_http_requests_total\{[^}]*route="orders-write"[^}]*\} 1$/m);
    expect(metrics).toMatch(/portico_http_requests_total\{[^}]*route="\/v1"[^}]*\} 1$/m);
  });
});
