/**
 * The cache purge of the admin listener, attacked the way a web page or DNS rebinding would:
 * a cross-site `text/plain` POST, a foreign Host, a foreign Origin, no or a wrong credential.
 * Each is refused with its problem, and the stored response is still served as a hit after it.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const TOKEN = 'test-admin-token-0123456789abcdef0123456789';
let upstream: RecordingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Cache-Control', 'max-age=600');
    res.end(JSON.stringify({ path: req.url }));
  });
  gw = await startTestGateway(
    upstream.url,
    { routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none', cache: true }] },
    { adminToken: TOKEN },
  );
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

/** The Cache-Status of a GET of the stored path. */
async function cacheStatus(): Promise<string> {
  const response = await request(`${gw.origin}/v1/orders/1`, { dispatcher: gw.agent });
  await response.body.text();
  return String(response.headers['cache-status']);
}

beforeEach(async () => {
  // Stored (again, when an earlier test purged it) and served as a hit.
  await cacheStatus();
  expect(await cacheStatus()).toMatch(/^Portico; hit/);
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A POST to the admin listener with exactly these headers (Host included). */
function post(path: string, headers: Record<string, string>, body = ''): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: gw.gateway.addresses.admin.port, path, method: 'POST', headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

const PURGE = '/cache/purge?prefix=/v1/orders';
const adminHost = () => `127.0.0.1:${gw.gateway.addresses.admin.port}`;
const legitimate = () => ({
  host: adminHost(),
  authorization: `Bearer ${TOKEN}`,
  'content-type': 'application/json',
});

function expectProblem(answer: Answer, status: number, code: string): void {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toBe('application/problem+json');
  expect(answer.headers['cache-control']).toBe('no-store');
  expect(JSON.parse(answer.body)).toMatchObject({ status, code });
}

describe('the admin purge refuses what a browser or a stranger can send', () => {
  it('a cross-site text/plain POST (a form or fetch from a web page) is refused', async () => {
    const answer = await post(
      PURGE,
      { host: adminHost(), origin: 'https://attacker.example', 'content-type': 'text/plain' },
      'x',
    );
    expectProblem(answer, 403, 'ERR_FORBIDDEN');
    expect(await cacheStatus()).toMatch(/^Portico; hit/);
  });

  it('a foreign Host (DNS rebinding) is refused, even with the credential', async () => {
    const answer = await post(PURGE, {
      ...legitimate(),
      host: `rebind.attacker.example:${gw.gateway.addresses.admin.port}`,
    });
    expectProblem(answer, 403, 'ERR_FORBIDDEN');
    expect(await cacheStatus()).toMatch(/^Portico; hit/);
  });

  it('a foreign Origin is refused, even with the credential', async () => {
    const answer = await post(PURGE, { ...legitimate(), origin: 'http://attacker.example' });
    expectProblem(answer, 403, 'ERR_FORBIDDEN');
    expect(await cacheStatus()).toMatch(/^Portico; hit/);
  });

  it('no credential is refused with 401 and a Bearer challenge', async () => {
    const headers: Record<string, string> = legitimate();
    delete headers['authorization'];
    const answer = await post(PURGE, headers);
    expectProblem(answer, 401, 'ERR_UNAUTHENTICATED');
    expect(answer.headers['www-authenticate']).toMatch(/^Bearer /);
    expect(await cacheStatus()).toMatch(/^Portico; hit/);
  });

  it('a wrong credential is refused with 401', async () => {
    const answer = await post(PURGE, { ...legitimate(), authorization: `Bearer ${TOKEN.slice(0, -1)}x` });
    expectProblem(answer, 401, 'ERR_INVALID_TOKEN');
    expect(await cacheStatus()).toMatch(/^Portico; hit/);
  });

  it('a simple-request content type is refused with 415, even with the credential', async () => {
    const answer = await post(PURGE, { ...legitimate(), 'content-type': 'text/plain' }, 'x');
    expectProblem(answer, 415, 'ERR_UNSUPPORTED_MEDIA_TYPE');
    expect(await cacheStatus()).toMatch(/^Portico; hit/);
  });

  it('the credential, the own Host, the own Origin and JSON purge (control)', async () => {
    const answer = await post(PURGE, { ...legitimate(), origin: `http://${adminHost()}` }, '{}');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ purged: 1, prefix: '/v1/orders' });
    expect(await cacheStatus()).toContain('fwd=uri-miss');
  });

  it('a loopback name is accepted as the Host (control)', async () => {
    const answer = await post(PURGE, {
      ...legitimate(),
      host: `localhost:${gw.gateway.addresses.admin.port}`,
    });
    expect(answer.status).toBe(200);
  });

  it('keeps /healthz, /readyz and /metrics open without a credential', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const response = await request(`${gw.adminOrigin}${path}`);
      await response.body.text();
      expect(response.statusCode).toBe(200);
    }
  });
});
