/**
 * `stripPrefix` and `rewrite` change the target sent upstream only, over real sockets: the
 * cache keys and the audit record on the path the client sent.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  auditRecordOf,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let upstream: RecordingUpstream;
let gw: TestGateway;
let auditLogPath: string;

beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.setHeader('cache-control', 'public, max-age=60');
      res.end(JSON.stringify({ url: req.url }));
    });
  });
  auditLogPath = join(mkdtempSync(join(tmpdir(), 'portico-test-route-rewrite-')), 'audit.log');
  gw = await startTestGateway(
    upstream.url,
    {
      routes: [
        { prefix: '/api', upstream: upstream.url, auth: 'none', stripPrefix: true },
        { prefix: '/shop', upstream: upstream.url, auth: 'none', rewrite: '/v2/store', cache: true },
        // Inherits its parent's rewrite, of the parent's prefix.
        { prefix: '/shop/old', deprecation: { at: '2025-06-01' } },
        { prefix: '/v1', upstream: upstream.url, auth: 'none', cache: true },
      ],
    },
    { auditLogPath },
  );
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
  rmSync(dirname(auditLogPath), { recursive: true, force: true });
});
beforeEach(() => {
  upstream.records.length = 0;
});

async function get(path: string): Promise<number> {
  return (await send(path)).status;
}

async function send(path: string): Promise<{ status: number; requestId: string }> {
  const response = await request(`${gw.origin}${path}`, { dispatcher: gw.agent });
  await response.body.dump();
  return { status: response.statusCode, requestId: String(response.headers['x-request-id']) };
}

describe('strip-prefix and rewrite', () => {
  it.each([
    ['/api/orders/42?expand=items', '/orders/42?expand=items'],
    ['/api', '/'],
    ['/api?x=1', '/?x=1'],
    ['/shop/items', '/v2/store/items'],
    ['/shop', '/v2/store'],
    ['/shop/old/items', '/v2/store/old/items'],
    ['/v1/orders', '/v1/orders'],
  ])('%s goes upstream as %s', async (path, sent) => {
    expect(await get(path)).toBe(200);
    expect(upstream.records.map((r) => r.url)).toEqual([sent]);
  });

  it('the cache keys on the path the client sent, not the one sent upstream', async () => {
    // /shop/x and /v1/... never share an entry; /shop/cached twice is one trip.
    expect(await get('/shop/cached')).toBe(200);
    expect(await get('/shop/cached')).toBe(200);
    expect(upstream.records.map((r) => r.url)).toEqual(['/v2/store/cached']);
  });

  it('the audit record and the request log keep the path the client sent', async () => {
    const { status, requestId } = await send('/api/logged?x=1');
    expect(status).toBe(200);
    expect(upstream.records.map((r) => r.url)).toEqual(['/logged?x=1']);
    const record = await auditRecordOf(auditLogPath, requestId);
    expect(record['path']).toBe('/api/logged');
    expect(record['route']).toBe('/api');
    expect(gw.logs.some((entry) => entry['path'] === '/api/logged')).toBe(true);
  });
});
