/**
 * From the attacker's side: a credential goes no further than the edge, on `auth: none`
 * routes too. A client that sends its token with every request (most client libraries do)
 * must not hand it to whatever serves `/v1/openapi.json` or `/v1/docs`, over HTTP/1.1 or h2.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { h2Request, h2Session } from '../support/h2-client.ts';
import { startRecordingUpstream, startTestGateway } from '../support/harness.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const CREDENTIALS = [
  'Bearer eyJhbGciOiJFUzI1NiIsInR5cCI6ImF0K2p3dCJ9.eyJzdWIiOiJ1MSJ9.c2ln',
  'ApiKey pk_live_example.secret',
  'Basic dXNlcjpwYXNz',
];

async function openRoutes() {
  const upstream = await startRecordingUpstream();
  cleanups.push(() => upstream.close());
  const gw = await startTestGateway(upstream.url, {
    routes: [
      { prefix: '/v1/openapi.json', upstream: upstream.url, auth: 'none' },
      { prefix: '/v1/docs', upstream: upstream.url, auth: 'none' },
    ],
  });
  cleanups.push(() => gw.close());
  return { upstream, gw };
}

describe('credentials on auth: none routes', () => {
  it('are not forwarded upstream over HTTP/1.1', async () => {
    const { upstream, gw } = await openRoutes();
    for (const path of ['/v1/openapi.json', '/v1/docs']) {
      for (const authorization of CREDENTIALS) {
        const response = await request(`${gw.origin}${path}`, {
          dispatcher: gw.agent,
          headers: { authorization },
        });
        await response.body.text();
        expect(response.statusCode).toBe(200);
      }
    }
    expect(upstream.records).toHaveLength(6);
    for (const seen of upstream.records) {
      expect(seen.headers['authorization']).toBeUndefined();
      expect(seen.rawHeaders.map((name) => name.toLowerCase())).not.toContain('authorization');
    }
  });

  it('are not forwarded upstream over HTTP/2', async () => {
    const { upstream, gw } = await openRoutes();
    const session = await h2Session(gw.port, gw.certificate.cert);
    cleanups.push(() => new Promise<void>((resolve) => session.close(() => resolve())));
    for (const authorization of CREDENTIALS) {
      const response = await h2Request(session, {
        ':method': 'GET',
        ':path': '/v1/openapi.json',
        authorization,
      });
      expect(response.status).toBe(200);
    }
    expect(upstream.records).toHaveLength(3);
    for (const seen of upstream.records) expect(seen.headers['authorization']).toBeUndefined();
  });
});
