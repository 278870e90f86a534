/**
 * Matching beyond the path prefix, over real sockets: `methods` (405 with Allow when only the
 * method misses), `hosts` (exact names, `*.` wildcards) and `headers` (exact values), the
 * most specific match winning (routing/route-table.ts).
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const names = ['general', 'writes', 'exact', 'wildcard', 'tenant', 'reports'] as const;
type Name = (typeof names)[number];
const upstreams = {} as Record<Name, RecordingUpstream>;
let gw: TestGateway;
/** Sends the Host a test names while the certificate is localhost's (undici takes SNI from Host). */
let anyHost: Agent;

beforeAll(async () => {
  for (const name of names) upstreams[name] = await startRecordingUpstream();
  const route = (name: Name, prefix: string, extra: Record<string, unknown> = {}) => ({
    prefix,
    upstream: upstreams[name].url,
    auth: 'none',
    ...extra,
  });
  gw = await startTestGateway(upstreams.general.url, {
    routes: [
      route('general', '/v1'),
      route('writes', '/v1', { methods: ['POST', 'PUT'] }),
      route('exact', '/v1', { hosts: ['api.example.com'] }),
      route('wildcard', '/v1', { hosts: ['*.example.com'] }),
      route('tenant', '/v1', { headers: { 'X-Tenant': 'acme' } }),
      // Only GET and HEAD: other methods are a 405, there being no route of /reports without.
      route('reports', '/reports', { methods: ['GET', 'HEAD'] }),
    ],
  });
  anyHost = new Agent({
    connect: { ca: gw.certificate.cert, servername: 'localhost', checkServerIdentity: () => undefined },
  });
});
afterAll(async () => {
  await anyHost.close();
  await gw.close();
  for (const name of names) await upstreams[name].close();
});
beforeEach(() => {
  for (const name of names) upstreams[name].records.length = 0;
});

async function send(path: string, options: { method?: string; headers?: Record<string, string> } = {}) {
  const response = await request(`${gw.origin}${path}`, {
    dispatcher: anyHost,
    method: options.method ?? 'GET',
    headers: options.headers ?? {},
  });
  const body = await response.body.text();
  return { status: response.statusCode, headers: response.headers, body };
}

function whoGot(): Name[] {
  return names.filter((name) => upstreams[name].records.length > 0);
}

describe('route matching', () => {
  it.each([
    ['GET, no host or header of a route', { method: 'GET' }, 'general'],
    ['POST goes to the route of methods', { method: 'POST' }, 'writes'],
    ['an exact host', { headers: { host: 'api.example.com' } }, 'exact'],
    ['an exact host, whatever the port and case', { headers: { host: 'API.example.com:8443' } }, 'exact'],
    ['a name below the wildcard', { headers: { host: 'eu.example.com' } }, 'wildcard'],
    ['the wildcard is not its own base name', { headers: { host: 'example.com' } }, 'general'],
    ['the header value, exactly', { headers: { 'x-tenant': 'acme' } }, 'tenant'],
    ['another header value', { headers: { 'x-tenant': 'acme2' } }, 'general'],
    // Precedence: the host before the header, the header before the method.
    ['host over header', { headers: { host: 'api.example.com', 'x-tenant': 'acme' } }, 'exact'],
    ['header over method', { method: 'POST', headers: { 'x-tenant': 'acme' } }, 'tenant'],
  ] as const)('%s', async (_title, options, expected) => {
    const { status } = await send('/v1/orders', options);
    expect(status).toBe(200);
    expect(whoGot()).toEqual([expected]);
  });

  it('a method no route of the path takes is a 405 with Allow', async () => {
    const { status, headers, body } = await send('/reports/daily', { method: 'DELETE' });
    expect(status).toBe(405);
    expect(headers['allow']).toBe('GET, HEAD');
    expect(headers['content-type']).toMatch(/application\/problem\+json/);
    expect(body).toContain('GET, HEAD');
    expect(whoGot()).toEqual([]);
    expect((await send('/reports/daily')).status).toBe(200);
    expect(whoGot()).toEqual(['reports']);
  });

  it('a path no route takes is still a 404', async () => {
    expect((await send('/elsewhere')).status).toBe(404);
  });
});
